// The floor for hardware counters: a minimal client of CUPTI's Range Profiler with no profiler
// logic (no launch tags, no kernel records, no tree), to measure what the API itself costs.
//
// It subscribes to the driver's kernel-launch callbacks, pushes a range named after the
// correlation id at each launch's entry and pops it at exit, and every `batch` ranges stops,
// decodes and restarts, exactly as Proton's user-range mode does; it evaluates nothing during
// the run (values are evaluated once at stop, untimed). Proton in mode="counters" is this plus
// kernel timing, attribution and the tree: bench/counters.py reports the two side by side.
//
// One CUPTI subscriber per process: run it in a process without a Proton session.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nanobind {
class module_;
}

namespace proton::bench {

struct CountersFloorStats {
  uint64_t ranges = 0;
  uint64_t batches = 0;
  uint64_t decode_ns = 0;
  uint64_t errors = 0;
  uint64_t evaluated = 0;  // ranges with values at stop
  double first_value = 0;  // metric 0 of range 0 (a sanity check)
};

/// Starts the floor on the current context (create one first, e.g. with torch). Returns false
/// with `why` set when CUPTI, the GPU or a metric name refuses.
bool counters_floor_start(const std::vector<std::string>& metrics, size_t batch, std::string& why);
CountersFloorStats counters_floor_stop();

/// Adds _counters_floor_start(metrics, batch) and _counters_floor_stop() -> dict to `m`.
void register_counters_floor(nanobind::module_& m);

}  // namespace proton::bench
