// The benchmark floor: CUPTI's own cost of kernel tracing, with no profiler around it.
//
// Enables only CONCURRENT_KERNEL activity with the backend's buffer sizes: no subscriber, no
// launch callbacks, no correlation. Completed buffers are walked record by record (as the
// backend must) and discarded. bench/ runs it to separate what CUPTI costs from what we add.
#pragma once

#include <string>

#include "backend/backend.h"

namespace proton {

/// Returns false with `why` set when CUPTI cannot be used (or the profiler holds it).
bool cupti_floor_start(std::string& why, const BackendOptions& options = {});
/// Flushes and disables; a no-op when not started.
void cupti_floor_stop();
/// Records walked since the last start (so a benchmark can check the floor really traced).
uint64_t cupti_floor_records();

}  // namespace proton
