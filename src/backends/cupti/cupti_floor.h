// The benchmark floor: CUPTI's own cost of kernel tracing, with no profiler around it.
//
// Enables only CONCURRENT_KERNEL activity with the backend's buffer sizes: no launch
// attribution, no correlation. Completed buffers are walked record by record (as the backend
// must) and discarded. bench/ runs it to separate what CUPTI costs from what we add.
//
// With FloorCallbacks::kLaunch it also subscribes to exactly the launch callback ids the
// backend enables (launch_callbacks()) with a callback that returns at once: the cost of
// CUPTI's callback dispatch, which any profiler that tags launches with a context pays. The
// backend's graph-resource and NVTX callbacks are left out: they fire on graph creation and
// NVTX ranges, not per launch.
//
// With options.graph_level it also enables CUPTI_ACTIVITY_KIND_GRAPH_TRACE: the floor of
// mode="graph" (one record per graph launch), for its overhead and memory comparisons.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"

namespace proton {

enum class FloorCallbacks : uint8_t {
  kNone,    // activity tracing only: the floor
  kLaunch,  // plus the backend's launch callbacks, each doing nothing
};

/// Returns false with `why` set when CUPTI cannot be used (or the profiler holds it). A second
/// start while started is a no-op, or fails if it asks for other callbacks.
bool cupti_floor_start(std::string& why, const BackendOptions& options = {},
                       FloorCallbacks callbacks = FloorCallbacks::kNone);
/// Flushes, disables and unsubscribes; a no-op when not started.
void cupti_floor_stop();
/// Records walked since the last start (so a benchmark can check the floor really traced).
uint64_t cupti_floor_records();

}  // namespace proton
