// Places intra-kernel regions inside their kernel's box on the trace.
//
// Regions carry GPU global-timer ns, which on an H100 ran ~1.75 ms apart from CUPTI's kernel
// timestamps: no fixed offset lines them up. Both arrive in launch order per kernel name (the
// CUPTI record and the instrumentation copy-back of the same launch), so the n-th region batch
// of a kernel pairs with the n-th kernel record of that name; the batch is then shifted so its
// first region starts where the kernel starts. Whichever comes first waits here.
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "data/region_metrics.h"

namespace proton {

class RegionAlignment {
 public:
  struct Batch {
    ContextId ctx = kRootContext;
    NameId kernel = kNoName;
    uint32_t device = 0;
    std::vector<RegionSpan> spans;  // global-timer ns
  };

  /// A kernel record of `name` started at `start_ns` (trace clock): the batch waiting for it.
  std::optional<Batch> on_kernel(NameId name, uint64_t start_ns) {
    auto it = batches_.find(name);
    if (it != batches_.end() && !it->second.empty()) {
      Batch b = std::move(it->second.front());
      it->second.pop_front();
      return b;
    }
    auto& starts = starts_[name];
    if (starts.size() >= kMaxWaiting) starts.pop_front();  // kernels that never get regions
    starts.push_back(start_ns);
    return std::nullopt;
  }

  /// A region batch: the start of its kernel when that record came first, else it waits.
  std::optional<uint64_t> on_regions(Batch&& b) {
    auto it = starts_.find(b.kernel);
    if (it != starts_.end() && !it->second.empty()) {
      uint64_t start = it->second.front();
      it->second.pop_front();
      return start;
    }
    auto& waiting = batches_[b.kernel];
    if (waiting.size() < kMaxWaiting) waiting.push_back(std::move(b));
    return std::nullopt;
  }

  /// Batches whose kernel record never came (no CUPTI, or dropped records).
  std::vector<Batch> take_unmatched() {
    std::vector<Batch> out;
    for (auto& [name, q] : batches_)
      for (auto& b : q)
        out.push_back(std::move(b));
    batches_.clear();
    return out;
  }

  /// Earliest region start of a batch (global-timer ns); 0 when empty.
  static uint64_t first_start(const Batch& b) {
    uint64_t first = UINT64_MAX;
    for (const RegionSpan& s : b.spans)
      first = s.start_ns < first ? s.start_ns : first;
    return first == UINT64_MAX ? 0 : first;
  }

 private:
  static constexpr size_t kMaxWaiting = 1024;
  std::unordered_map<NameId, std::deque<uint64_t>> starts_;
  std::unordered_map<NameId, std::deque<Batch>> batches_;
};

}  // namespace proton
