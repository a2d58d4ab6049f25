// Device-side launch metrics on the call tree: where each accumulator slot's sum goes.
//
// A launch_metadata value that lives on the GPU (a tensor) is never read per launch: each
// launch adds it, on its own stream, to a device accumulator slot, and the slot is read back
// once, when the session's data is read (finalize, data.get). So the value reaches the tree
// after the fact, and must go to the kernel nodes that the slot's launches reached: the tree
// collector notes them here as their kernel records arrive (graph replays included, whose
// kernels carry the captured launch's metadata), and place() hands a read-back value to them.
//
// One slot serves one (sessions, launch context, kernel, metric) key, so it almost always
// reaches one node; when it reached several (phases, kernels of one launch site placed apart),
// the value is split over them by their launches since the last read-back (the split is exact
// when every launch adds the same value). A property ("(pty)") is the last value: each node
// gets it whole.
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "common/ids.h"
#include "common/metric_value.h"
#include "data/call_tree.h"

namespace proton {

class DeviceMetricSites {
 public:
  /// The tree of a phase, nullptr when it was written out or cleared.
  using TreeOf = std::function<CallTree*(uint32_t phase)>;

  /// A launch whose metadata added to `slot` ran as kernel node `node` of phase `phase`.
  void note(uint32_t slot, uint32_t phase, CallTree::NodeId node);
  /// Adds `value` of `metric` (an int or float) to the nodes `slot`'s launches reached; false
  /// when none did (their kernel records never came). Throws MetricTypeError as add_metric.
  bool place(uint32_t slot, NameId metric, const MetricValue& value, const TreeOf& tree_of);
  /// Forgets nodes of `phase` (or of every phase up to it): its tree was cleared or written.
  void forget_phases(uint32_t phase, bool up_to);

 private:
  struct Site {
    uint32_t phase;
    CallTree::NodeId node;
    uint64_t launches;  // all of them
    uint64_t recent;    // since the last place()
  };
  std::unordered_map<uint32_t, std::vector<Site>> sites_;
};

}  // namespace proton
