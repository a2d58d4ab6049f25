// Counters of the CUPTI backend for diagnostics (tests, memory studies), without CUPTI headers
// so the Python module can include it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace proton::cupti {

struct Diagnostics {
  size_t buffer_bytes = 0;       // size of each activity buffer
  size_t buffers_allocated = 0;  // buffers alive (free or lent to CUPTI)
  size_t buffers_free = 0;
  uint64_t buffers_declined = 0;       // requests refused at the pool's cap
  uint64_t graph_level_fallbacks = 0;  // mode="graph" runs that fell back to per-kernel records
  uint64_t periodic_flushes = 0;       // flushes the periodic check decided on (flush_policy.h)
};

Diagnostics diagnostics();

}  // namespace proton::cupti
