// Launch metadata attached to single kernel launches (Triton's `launch_metadata`, hook="triton").
//
// The launch hook runs just before a Triton kernel launch, with the kernel's metadata. It
// interns that metadata here as an op and marks it pending on the calling thread; the launch
// callback moves the pending op id into the launch's tag (one thread-local exchange), and the
// session that receives the kernel renames the kernel's node after the op and adds its metrics
// there, once per launch. Ops are interned by content, so the table grows with the distinct
// (name, metric values) pairs a program launches (typically kernels x shapes), not with the
// number of launches, and entries are never freed: a tag may reach its session long after
// the launch.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/chunked_array.h"
#include "common/hot.h"
#include "common/ids.h"
#include "common/metric_value.h"

namespace proton {

struct LaunchOp {
  NameId name = kNoName;  // kernel node name; kNoName keeps the kernel's own name
  std::vector<std::pair<NameId, MetricValue>> metrics;
  // Metrics whose values are on the device (a launch_metadata tensor): (metric, accumulator
  // slot). Each launch added its value to the slot on its stream; the session notes which
  // kernel nodes the slot's launches reached, and the slot's sum goes there when it is read
  // back (Session::add_device_slot_value), with no host synchronization per launch.
  std::vector<std::pair<NameId, uint32_t>> device_slots;
};

class LaunchOps {
 public:
  static LaunchOps& global();

  /// The id of the op with this name and metrics (>= 1), added on first use. Takes a mutex
  /// (launch-hook side, not the launch callback).
  uint32_t intern(NameId name, std::vector<std::pair<NameId, MetricValue>> metrics,
                  std::vector<std::pair<NameId, uint32_t>> device_slots = {});
  /// Lock-free: entries never move once published. `id` must come from intern().
  const LaunchOp& get(uint32_t id) const { return ops_[id]; }
  size_t size() const { return ops_.size(); }

  /// Marks `op` for the calling thread's next launch (0 clears it).
  static void set_pending(uint32_t op) { hot::this_thread().pending_op = op; }
  /// Hot path: the pending op of this thread, cleared so that it tags one launch only.
  static uint32_t take_pending() { return take_pending(hot::this_thread()); }
  /// The same, given the calling thread's hot::Thread.
  static uint32_t take_pending(hot::Thread& self) { return std::exchange(self.pending_op, 0u); }

 private:
  LaunchOps();
  std::mutex mu_;                                    // guards index_ and appends to ops_
  std::unordered_map<std::string, uint32_t> index_;  // serialised content -> id
  ChunkedArray<LaunchOp> ops_;                       // [0] is the empty op
};

}  // namespace proton
