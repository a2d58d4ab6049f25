// The metrics added to a CPU scope while a trace records it (proton.scope(..., metrics=...) and
// add_metrics inside a scope), on their way from the adding thread to the scope's trace event.
//
// Unlike launch metadata (launch_ops.h), which is interned by content for the process's life,
// a set here is counted: the staged tag holds one reference until the record thread has handed
// it to every tracing session, and each trace store holds one for as long as it keeps the
// scope's event (until the event is dropped by the budget, spilled to the output, or the store
// ends). A set nobody holds is reused, so a job that adds a new value to a scope every step
// keeps as many sets as its traces keep events, not one per step.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "common/metric_value.h"

namespace proton {

class ScopeMetricSets {
 public:
  using Metrics = std::vector<std::pair<NameId, MetricValue>>;
  static ScopeMetricSets& global();

  /// A new set (id >= 1) holding `metrics`, with one reference (the caller's).
  uint32_t add(Metrics metrics);
  void retain(uint32_t id);
  /// Drops a reference; the last one frees the set for reuse. 0 is ignored.
  void release(uint32_t id);
  /// The metrics of a set the caller holds a reference to (they do not move meanwhile).
  const Metrics& get(uint32_t id) const;
  /// Sets held now (tests, and the memory a trace keeps).
  size_t live() const;

 private:
  struct Set {
    Metrics metrics;
    uint32_t refs = 0;
  };
  mutable std::mutex mu_;
  std::deque<Set> sets_;  // [id - 1]; a deque: elements stay put as it grows
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace proton
