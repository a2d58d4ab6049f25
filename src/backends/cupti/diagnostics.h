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

Diagnostics diagnostics();

#ifdef PROTON_DIAGNOSTICS
/// subscriber_hook.h without CUPTI types, for the Python module: the product's subscriber
/// callback as an address, and the stand-in (0: none) the next start subscribes instead.
uintptr_t product_callback_address();
void set_subscriber_callback_address(uintptr_t address);
#endif

}  // namespace proton::cupti
