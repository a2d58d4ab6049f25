// The benchmark floor: CUPTI's own cost of kernel tracing, with no profiler around it.
//
// Enables only CONCURRENT_KERNEL activity with the backend's buffer sizes: no launch
// attribution, no correlation. Completed buffers are walked record by record (as the backend
// must) and discarded. bench/ runs it to separate what CUPTI costs from what we add.
//
// The variants split the cost of the ways a profiler can learn which launch made a kernel:
//   callbacks    the backend's launch callback ids (all, or one domain's), each returning at
//                once: CUPTI's callback dispatch, which any profiler that tags launches pays;
//   api_records  activity records for those launch APIs only (cuptiActivityEnable{Runtime,
//                Driver}Api): correlation through records instead of callbacks;
//   external     external-correlation records, under one id pushed on the starting thread.
//   flush_ms     the backend's periodic plain flush, from a thread of its own: what handing
//                partly filled buffers over costs the launching thread, with no attribution.
//   kernels      off: no kernel records at all, so a variant with callbacks measures what
//                CUPTI's launch callbacks cost without kernel tracing (the split of a session's
//                cost between tagging launches and timing kernels).
// FloorConfig::count makes the callbacks count dispatches per domain and check which domain's
// correlation id the kernel records carry (a diagnostic: counting is not free).
// The backend's graph-resource and NVTX callbacks are left out: they fire on graph creation and
// NVTX ranges, not per launch.
//
// With options.graph_level it also enables CUPTI_ACTIVITY_KIND_GRAPH_TRACE: the floor of
// mode="graph" (one record per graph launch), for its overhead and memory comparisons.
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"

namespace proton {

/// Which of the backend's launch ids (launch_callbacks()) a floor variant turns on.
enum class LaunchSet : uint8_t {
  kNone,
  kAll,       // every id the backend enables
  kRuntime,   // its runtime-API ids only
  kDriver,    // its driver-API ids only
  kProfiler,  // the ids the backend enables by default (BackendOptions::launch_callbacks)
};

struct FloorConfig {
  LaunchSet callbacks = LaunchSet::kNone;    // callbacks that return at once
  LaunchSet api_records = LaunchSet::kNone;  // activity records of these APIs
  bool external = false;  // external-correlation records under one id pushed at start
  bool count = false;     // count callbacks and correlation matches (see FloorCounts)
  uint32_t flush_ms = 0;  // a plain cuptiActivityFlushAll this often, as the backend does (0: no)
  bool kernels = true;    // CONCURRENT_KERNEL records; false: the callbacks' cost alone
  bool operator==(const FloorConfig&) const = default;
};

/// Returns false with `why` set when CUPTI cannot be used (or the profiler holds it). A second
/// start while started is a no-op, or fails if it asks for another configuration.
bool cupti_floor_start(std::string& why, const BackendOptions& options = {},
                       FloorConfig config = {});
/// Flushes, disables and unsubscribes; a no-op when not started.
void cupti_floor_stop();

/// What the floor saw since its last start.
struct FloorCounts {
  uint64_t records = 0;           // records of any kind walked
  uint64_t kernels = 0;           // kernel records
  uint64_t api_records = 0;       // runtime or driver API records
  uint64_t external_records = 0;  // external-correlation records
  // With FloorConfig::count:
  uint64_t runtime_callbacks = 0;   // launch callbacks entered, runtime domain
  uint64_t driver_callbacks = 0;    // launch callbacks entered, driver domain
  uint64_t kernels_runtime_id = 0;  // kernels whose correlation id a runtime callback carried
  uint64_t kernels_driver_id = 0;   // ... a driver callback carried
};
FloorCounts cupti_floor_counts();
/// Records walked since the last start (so a benchmark can check the floor really traced).
uint64_t cupti_floor_records();

}  // namespace proton
