#include "backends/cupti/pc_sampling_lines.h"

#include "common/name_table.h"

namespace proton::cupti {

void PcLineMap::add_binary(uint64_t crc, const void* data, size_t size) {
  if (data == nullptr || size == 0 || size > max_bytes_) return;
  std::lock_guard lock(mu_);
  if (binaries_.count(crc) != 0) return;
  while (bytes_ + size > max_bytes_ && !order_.empty()) {
    auto it = binaries_.find(order_.front());
    order_.pop_front();
    if (it == binaries_.end()) continue;
    bytes_ -= it->second.size();
    binaries_.erase(it);
    ++stats_.evicted;
  }
  const char* p = static_cast<const char*>(data);
  binaries_.emplace(crc, std::vector<char>(p, p + size));
  order_.push_back(crc);
  bytes_ += size;
}

NameId PcLineMap::locate(uint64_t crc, NameId function, const char* function_name, uint64_t pc) {
  std::lock_guard lock(mu_);
  Key key{crc, pc, function};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto bin = binaries_.find(crc);
  if (bin == binaries_.end() || !correlate_) {
    // Not cached: the binary may be loaded later (a sample drained before its module's
    // callback ran cannot happen, but a reload after eviction can).
    return kNoName;
  }
  SourceLine line;
  ++stats_.lookups;
  NameId name = kNoName;
  if (correlate_(bin->second.data(), bin->second.size(), function_name, pc, line) &&
      line.line != 0 && !line.file.empty()) {
    std::string s =
        line.dir.empty() || line.file.front() == '/' ? line.file : line.dir + "/" + line.file;
    s += ":" + std::to_string(line.line) + "@" + function_name;
    name = NameTable::global().intern(s);
  }
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(key, name);
  return name;
}

PcLineMap::Stats PcLineMap::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.binaries = binaries_.size();
  s.binary_bytes = bytes_;
  s.cached = cache_.size();
  return s;
}

void PcLineMap::clear() {
  std::lock_guard lock(mu_);
  binaries_.clear();
  order_.clear();
  cache_.clear();
  bytes_ = 0;
}

}  // namespace proton::cupti
