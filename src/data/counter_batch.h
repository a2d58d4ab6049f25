// Counter values as they travel from a backend to the sessions, in batches.
//
// The backend decodes hardware counters off the launching threads (a batch of ranges, or a
// stretch of PM samples) and hands one batch at a time through the RecordProcessor to the
// session layer. Flat arrays: one row of schema->size() doubles per launch or sample.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/counter_rules.h"

namespace proton {

/// Per-launch values (range profiler): row i belongs to launch correlation[i].
struct LaunchCounters {
  const CounterSchema* schema = nullptr;
  std::vector<uint64_t> correlation;
  std::vector<double> values;  // correlation.size() x schema->size(), NaN = not measured

  std::span<const double> row(size_t i) const {
    return {values.data() + i * schema->size(), schema->size()};
  }
  size_t size() const { return correlation.size(); }
};

/// Device-wide samples (PM sampling): sample i covers [start_ns[i], end_ns[i]) on the clock of
/// kernel records.
struct CounterSamples {
  const CounterSchema* schema = nullptr;
  uint32_t device = 0;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
  std::vector<double> values;  // start_ns.size() x schema->size()

  std::span<const double> row(size_t i) const {
    return {values.data() + i * schema->size(), schema->size()};
  }
  size_t size() const { return start_ns.size(); }
};

}  // namespace proton
