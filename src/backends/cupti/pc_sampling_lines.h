// PC -> source line for PC sampling: the binaries, kept from module-load callbacks, and the
// mapping, asked of CUPTI once per (binary, function, PC).
//
// cuptiGetSassToSourceCorrelation needs the cubin itself, and samples name it only by CRC, so
// every module loaded while sampling is copied here (bounded: the oldest binaries go first;
// their PCs then count on the kernel node, lines unknown). A module unload keeps the copy:
// samples of its last kernels may still be in CUPTI's buffers, and a reload with the same CRC
// finds it.
//
// Threads: module callbacks (any application thread) add binaries; the drain thread maps PCs.
// mu_ guards everything.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/ids.h"

namespace proton::cupti {

class PcLineMap {
 public:
  /// (cubin, size, function, pc) -> line, file, dir; false without line information.
  struct SourceLine {
    uint32_t line = 0;
    std::string file;
    std::string dir;
  };
  using Correlate = std::function<bool(const void* cubin, size_t size, const char* function,
                                       uint64_t pc, SourceLine& out)>;

  explicit PcLineMap(uint64_t max_binary_bytes) : max_bytes_(max_binary_bytes) {}

  void set_correlate(Correlate c) {
    std::lock_guard lock(mu_);
    correlate_ = std::move(c);
  }
  /// Binaries loaded before sampling started never reach add_binary (their load callback
  /// came earlier). Triton keeps every cubin it compiled in its cache folder: for a CRC we do
  /// not hold, `dirs` are scanned for *.cubin files (each file read once, a rescan at most
  /// every kRescanNs) and indexed under the CRC `crc_of` computes; a file's bytes are kept
  /// only once a sample asks for its CRC.
  using CrcOf = std::function<bool(const void* data, size_t size, uint64_t& crc)>;
  void set_binary_folders(std::vector<std::string> dirs, CrcOf crc_of);
  /// Keeps a copy of a loaded binary under `crc` (a second load of the same CRC is free).
  void add_binary(uint64_t crc, const void* data, size_t size);
  /// The location name "dir/file:line@function" of a PC, kNoName without line information or
  /// binary. Cached per (crc, function, pc).
  NameId locate(uint64_t crc, NameId function, const char* function_name, uint64_t pc);

  struct Stats {
    uint64_t binaries = 0;
    uint64_t binary_bytes = 0;
    uint64_t evicted = 0;
    uint64_t lookups = 0;       // CUPTI correlation calls
    uint64_t cached = 0;        // locations in the cache
    uint64_t from_folders = 0;  // binaries found in Triton's cache folder
  };
  Stats stats() const;
  void clear();

 private:
  struct Key {
    uint64_t crc;
    uint64_t pc;
    NameId function;
    bool operator==(const Key& o) const {
      return crc == o.crc && pc == o.pc && function == o.function;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.crc * 0x9E3779B97F4A7C15ull ^ k.pc * 31 ^ k.function);
    }
  };
  // A line cache that grew past this is dropped and rebuilt: every entry is re-derivable.
  static constexpr size_t kMaxCached = 1u << 20;

  void scan_folders();                                            // requires mu_
  void add_binary_locked(uint64_t crc, std::vector<char> bytes);  // requires mu_
  bool load_from_folders(uint64_t crc);                           // requires mu_
  static std::vector<char> read_file(const std::string& path);
  static constexpr uint64_t kRescanNs = 2'000'000'000;

  mutable std::mutex mu_;
  std::vector<std::string> folders_;
  CrcOf crc_of_;
  std::unordered_map<std::string, bool> scanned_;           // files already read
  std::unordered_map<uint64_t, std::string> folder_index_;  // crc -> cubin file in folders_
  uint64_t last_scan_ns_ = 0;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  std::unordered_map<uint64_t, std::vector<char>> binaries_;  // crc -> cubin copy
  std::deque<uint64_t> order_;                                // load order, for eviction
  std::unordered_map<Key, NameId, KeyHash> cache_;
  Correlate correlate_;
  Stats stats_;
};

}  // namespace proton::cupti
