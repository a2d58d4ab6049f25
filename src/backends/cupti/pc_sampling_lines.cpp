#include "backends/cupti/pc_sampling_lines.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "common/clock.h"
#include "common/name_table.h"

namespace proton::cupti {

void PcLineMap::set_binary_folders(std::vector<std::string> dirs, CrcOf crc_of) {
  std::lock_guard lock(mu_);
  folders_ = std::move(dirs);
  crc_of_ = std::move(crc_of);
  last_scan_ns_ = 0;
}

void PcLineMap::scan_folders() {
  if (folders_.empty() || !crc_of_) return;
  uint64_t now = steady_ns();
  if (last_scan_ns_ != 0 && now - last_scan_ns_ < kRescanNs) return;
  last_scan_ns_ = now;
  namespace fs = std::filesystem;
  for (const std::string& dir : folders_) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it.depth() > 2) {
        it.disable_recursion_pending();
        continue;
      }
      const fs::path& p = it->path();
      if (p.extension() != ".cubin" || scanned_.count(p.string()) != 0) continue;
      scanned_[p.string()] = true;
      std::vector<char> bytes = read_file(p.string());
      uint64_t crc = 0;
      if (bytes.empty() || !crc_of_(bytes.data(), bytes.size(), crc)) continue;
      folder_index_.emplace(crc, p.string());  // the bytes are kept only once asked for
    }
  }
}

std::vector<char> PcLineMap::read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool PcLineMap::load_from_folders(uint64_t crc) {
  auto it = folder_index_.find(crc);
  if (it == folder_index_.end()) {
    scan_folders();
    it = folder_index_.find(crc);
    if (it == folder_index_.end()) return false;
  }
  std::vector<char> bytes = read_file(it->second);
  if (bytes.empty() || bytes.size() > max_bytes_) return false;
  add_binary_locked(crc, std::move(bytes));
  ++stats_.from_folders;
  return true;
}

void PcLineMap::add_binary(uint64_t crc, const void* data, size_t size) {
  if (data == nullptr || size == 0 || size > max_bytes_) return;
  const char* p = static_cast<const char*>(data);
  std::lock_guard lock(mu_);
  if (binaries_.count(crc) != 0) return;
  add_binary_locked(crc, std::vector<char>(p, p + size));
}

void PcLineMap::add_binary_locked(uint64_t crc, std::vector<char> bytes) {
  size_t size = bytes.size();
  while (bytes_ + size > max_bytes_ && !order_.empty()) {
    auto it = binaries_.find(order_.front());
    order_.pop_front();
    if (it == binaries_.end()) continue;
    bytes_ -= it->second.size();
    binaries_.erase(it);
    ++stats_.evicted;
  }
  binaries_.emplace(crc, std::move(bytes));
  order_.push_back(crc);
  bytes_ += size;
}

NameId PcLineMap::locate(uint64_t crc, NameId function, const char* function_name, uint64_t pc) {
  std::lock_guard lock(mu_);
  Key key{crc, pc, function};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  auto bin = binaries_.find(crc);
  if (bin == binaries_.end() && load_from_folders(crc)) bin = binaries_.find(crc);
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
  scanned_.clear();
  folder_index_.clear();
  bytes_ = 0;
}

}  // namespace proton::cupti
