// PC samples on the call tree: per kernel node, one child per source location.
//
// Attribution without a correlation id. Continuous sampling tells which function a sample
// came from, never which launch. So each function's samples go to the call-path nodes that ran
// that function, in proportion to their GPU time of it over the same interval: the kernel time
// noted (note_kernel) since the function's samples were last placed. When one call path runs
// the function (the usual case) that is exact. Samples often arrive before the kernel records
// of their launches (activity buffers are handed over later): they wait, aggregated per
// location, until kernel time of their function is known, or until kWaitDrains drains have
// passed, when the function's last known split is used; at settle(final) every sample is
// placed, those of functions no kernel record ever named under the root's
// "unattributed PC samples" node, counted, never dropped.
//
// Tree layout (Hatchet metrics are exclusive to their node; viewers sum upwards):
//   <call path> / <kernel> / "file:line@function"       num_samples, num_stalled_samples,
//                                                        stalled_<reason>...
// Samples of PCs without line information (PyTorch's and other binaries built without
// -lineinfo) add the same metrics on the kernel node itself, summed over its PCs, as
// triton.profiler writes them.
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "data/call_tree.h"
#include "data/pc_sample.h"

namespace proton {

class PcAttribution {
 public:
  /// Drains a function's samples may wait for kernel time before its last split is used.
  static constexpr uint32_t kWaitDrains = 3;

  struct Stats {
    uint64_t samples = 0;       // every sample received
    uint64_t placed = 0;        // placed under a kernel node
    uint64_t unattributed = 0;  // placed under "unattributed PC samples"
    uint64_t late = 0;          // their kernel's phase was already written or cleared
    uint64_t pending = 0;       // waiting now
    uint64_t buffer_full = 0;   // drains that found the hardware buffer full
    uint64_t dropped = 0;       // samples the hardware reported lost
    uint64_t non_user = 0;      // samples in library kernels CUPTI gives no PCs for
    uint64_t without_line = 0;  // samples of PCs without line information
  };

  /// The tree of a phase, nullptr when it was written out or cleared.
  using TreeOf = std::function<CallTree*(uint32_t phase)>;

  /// A kernel of `function` ran `ns` on node `kernel_node` of phase `phase`'s tree.
  void note_kernel(NameId function, uint32_t phase, CallTree::NodeId kernel_node, uint64_t ns);
  /// Takes a drain's samples (they wait until distribute()).
  void add(const PcSampleBatch& batch);
  /// Places what can be placed. `final`: nothing waits (end of a flush).
  void distribute(const TreeOf& tree_of, bool final);
  /// Writes the collection counters not yet written on the root of `tree` (settle time).
  void write_counters(CallTree& tree);
  /// Forgets kernel sites of `phase` (or of every phase up to it): its tree was cleared or
  /// written out, and a node id must never reach another tree.
  void forget_phases(uint32_t phase, bool up_to);
  const Stats& stats() const { return stats_; }

 private:
  struct Site {
    uint32_t phase;
    CallTree::NodeId node;
    uint64_t ns;
  };
  struct Waiting {
    // location (kNoName: no line information, the kernel node itself) -> samples per reason
    std::unordered_map<NameId, std::vector<uint64_t>> per_location;
    uint32_t age = 0;
  };
  void place(Waiting& w, const std::vector<Site>& sites, const TreeOf& tree_of);
  void add_counts(CallTree& tree, CallTree::NodeId kernel, NameId location,
                  const std::vector<uint64_t>& per_reason);

  std::shared_ptr<const PcStallTable> reasons_;
  std::unordered_map<NameId, Waiting> waiting_;
  std::unordered_map<NameId, std::vector<Site>> window_;   // kernel time since last placement
  std::unordered_map<NameId, std::vector<Site>> history_;  // the split used last time
  NameId num_samples_ = kNoName;
  NameId num_stalled_ = kNoName;
  NameId unattributed_ = kNoName;
  Stats stats_;
  Stats written_;  // counters already written on a root
};

}  // namespace proton
