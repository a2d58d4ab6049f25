#include "data/call_tree.h"

#include <algorithm>
#include <limits>

#include "common/name_table.h"
#include "context/context_tree.h"

namespace proton {

namespace {
constexpr CallTree::NodeId kUnmapped = std::numeric_limits<CallTree::NodeId>::max();
}

const char* device_type_name(DeviceType t) {
  return t == DeviceType::kHip ? "HIP" : "CUDA";
}

CallTree::CallTree() {
  clear();
}

void CallTree::clear() {
  nodes_.clear();
  child_index_.clear();
  context_nodes_.clear();
  metric_types_.clear();
  has_kernels_ = false;
  devices_seen_[0] = devices_seen_[1] = 0;
  nodes_.emplace_back().name = NameTable::global().intern("ROOT");
}

CallTree::NodeId CallTree::child(NodeId parent, NameId name) {
  auto [it, inserted] = child_index_.try_emplace(key(parent, name), 0);
  if (inserted) {
    auto id = static_cast<NodeId>(nodes_.size());
    Node& node = nodes_.emplace_back();
    node.name = name;
    node.parent = parent;
    nodes_[parent].children.push_back(id);
    it->second = id;
  }
  return it->second;
}

CallTree::NodeId CallTree::node_for_context(ContextId ctx) {
  if (ctx == kRootContext) return kRoot;
  if (ctx < context_nodes_.size() && context_nodes_[ctx] != kUnmapped) return context_nodes_[ctx];
  const auto& n = ContextTree::global().node(ctx);
  NodeId id = child(node_for_context(n.parent), n.name);
  if (ctx >= context_nodes_.size()) context_nodes_.resize(ctx + 1, kUnmapped);
  context_nodes_[ctx] = id;
  return id;
}

void CallTree::mark_cycles(NodeId id, uint32_t device_id, DeviceType type) {
  Node& n = nodes_[id];
  n.has_cycles = true;
  n.cycles_device_id = device_id;
  n.cycles_device_type = type;
}

void CallTree::add_kernel(NodeId id, uint64_t duration_ns, uint32_t device_id, DeviceType type) {
  Node& n = nodes_[id];
  n.has_kernel = true;
  n.kernel.time_ns += duration_ns;
  n.kernel.min_ns = n.kernel.count == 0 ? duration_ns : std::min(n.kernel.min_ns, duration_ns);
  n.kernel.max_ns = std::max(n.kernel.max_ns, duration_ns);
  n.kernel.count += 1;
  n.kernel.device_id = device_id;
  n.kernel.device_type = type;
  has_kernels_ = true;
  if (device_id < 64) devices_seen_[static_cast<int>(type)] |= uint64_t{1} << device_id;
}

void CallTree::add_metric(NodeId id, NameId name, MetricValue value) {
  std::string_view text = NameTable::global().name(name);
  value = coerce_metric(text, std::move(value));
  MetricType type = metric_type(value);
  auto [it, inserted] = metric_types_.try_emplace(name, type);
  if (!inserted && it->second != type) {
    // "Metric value type mismatch for valueId" is triton.profiler's phrase: scripts match on it.
    throw MetricTypeError("Metric value type mismatch for valueId of metric '" + std::string(text) +
                          "': it was " + metric_type_name(it->second) + ", now " +
                          metric_type_name(type));
  }
  auto& metrics = nodes_[id].metrics;
  for (auto& [metric, stored] : metrics) {
    if (metric == name) {
      combine_metric(metric_rule(text), stored, value);
      return;
    }
  }
  metrics.emplace_back(name, std::move(value));
}

}  // namespace proton
