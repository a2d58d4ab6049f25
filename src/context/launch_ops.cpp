#include "context/launch_ops.h"

#include <cstring>
#include <type_traits>

namespace proton {

namespace {

template <typename T>
void append_raw(std::string& key, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  key.append(bytes, sizeof(T));
}

// A byte string equal for equal ops: name, then per metric its name, type and value bytes,
// then the device slots.
std::string content_key(NameId name, const std::vector<std::pair<NameId, MetricValue>>& metrics,
                        const std::vector<std::pair<NameId, uint32_t>>& device_slots) {
  std::string key;
  key.reserve(8 + metrics.size() * 24);
  append_raw(key, name);
  for (const auto& [metric, value] : metrics) {
    append_raw(key, metric);
    append_raw(key, static_cast<uint8_t>(value.index()));
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t> || std::is_same_v<V, double>) {
            append_raw(key, v);
          } else {
            append_raw(key, static_cast<uint64_t>(v.size()));
            for (const auto& e : v)
              append_raw(key, e);
          }
        },
        value);
  }
  append_raw(key, static_cast<uint64_t>(device_slots.size()));
  for (const auto& [metric, slot] : device_slots) {
    append_raw(key, metric);
    append_raw(key, slot);
  }
  return key;
}

}  // namespace

LaunchOps& LaunchOps::global() {
  static LaunchOps* ops = new LaunchOps();  // leaked: read by the record thread during exit
  return *ops;
}

LaunchOps::LaunchOps() {
  ops_.push_back(LaunchOp{});  // id 0: no op
}

uint32_t LaunchOps::intern(NameId name, std::vector<std::pair<NameId, MetricValue>> metrics,
                           std::vector<std::pair<NameId, uint32_t>> device_slots) {
  std::string key = content_key(name, metrics, device_slots);
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second;
  auto id = static_cast<uint32_t>(
      ops_.push_back(LaunchOp{name, std::move(metrics), std::move(device_slots)}));
  index_.emplace(std::move(key), id);
  return id;
}

}  // namespace proton
