// Counters of the CUPTI backend for diagnostics (tests, memory studies), without CUPTI headers
// so the Python module can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace proton::cupti {

struct Diagnostics {
  uint64_t buffer_bytes = 0;       // size of each activity buffer
  uint64_t buffers_allocated = 0;  // buffers alive (free or lent to CUPTI)
  uint64_t buffers_free = 0;
  uint64_t buffers_declined = 0;       // requests refused at the pool's cap
  uint64_t graph_level_fallbacks = 0;  // mode="graph" runs that fell back to per-kernel records
  uint64_t graph_trace_enables = 0;    // mode="graph": GRAPH_TRACE enabled at a graph's creation
  uint64_t periodic_flushes = 0;       // flushes the periodic check decided on (flush_policy.h)
};

/// The subscriber callback as PROTON_DIAG_CALLBACK chose it (callback_probe.h).
struct CallbackTiming {
  std::string mode;          // "", "timed" or "empty"
  uint64_t enter_calls = 0;  // launch-API callbacks at API enter (timed mode only)
  uint64_t exit_calls = 0;
  double enter_ns = 0;  // mean time in the callback per call, TSC reads included
  double exit_ns = 0;
  double probe_ns = 0;  // what two back-to-back TSC reads cost
};

Diagnostics diagnostics();
CallbackTiming callback_timing();

}  // namespace proton::cupti
