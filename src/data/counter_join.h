// Joins per-launch counter values with the kernel records of the same launch.
//
// The two halves arrive separately and in either order: kernel records through the activity
// buffers, counter values when the backend decodes a batch of ranges. Both carry the launch's
// correlation id. Whichever comes first waits here; the second attaches the values to the
// kernel's node. A CUDA graph launch is one range, so its values arrive once for many kernel
// records (same correlation): the kernels' durations accumulate on the waiting entry and the
// values attach once, to the node the session chose for the launch.
//
// Bounded: each side keeps at most `capacity` waiting entries; past that the oldest
// correlations are dropped and counted (a range CUPTI dropped, or a kernel whose values never
// come, must not grow memory forever).
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "data/call_tree.h"

namespace proton {

class CounterJoin {
 public:
  struct Target {
    uint32_t phase = 0;
    CallTree::NodeId node = CallTree::kRoot;
    uint64_t duration_ns = 0;
  };
  struct Stats {
    uint64_t joined = 0;           // launches whose values reached the tree
    uint64_t dropped_values = 0;   // values that never met a kernel (capacity)
    uint64_t dropped_kernels = 0;  // kernels that never met values (capacity or settle)
  };

  explicit CounterJoin(size_t capacity = 1u << 16) : capacity_(capacity) {}

  /// A kernel record of launch `correlation` landed on `target`. Returns true and fills
  /// `values` when the launch's values were already here (the caller attaches them now).
  bool kernel(uint64_t correlation, const Target& target, std::vector<double>& values);
  /// Values of launch `correlation`. Returns true and fills `target` (durations of every
  /// record of the launch so far) when a kernel was already here.
  bool values(uint64_t correlation, std::span<const double> values, Target& target);

  /// Forgets kernels still waiting (end of a flush: their ranges were dropped). Values wait on:
  /// they may belong to kernels whose records come in a later buffer.
  void settle();
  /// Drops everything (data.clear of every phase).
  void clear();

  const Stats& stats() const { return stats_; }
  size_t waiting() const { return kernels_.size() + values_.size(); }

 private:
  size_t capacity_;
  std::map<uint64_t, Target> kernels_;              // ordered: the oldest go first
  std::map<uint64_t, std::vector<double>> values_;  // idem
  Stats stats_;
};

}  // namespace proton
