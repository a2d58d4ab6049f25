// The PC-sampling floor: the least any client of CUPTI's PC-sampling API can cost.
//
// Continuous mode on the current context, no start/stop control, no synchronization, a thread
// of its own calling cuptiPCSamplingGetData every drain_ms and counting what it gets: nothing
// else (no kernel activity, no source mapping, no tree). bench/pc_sampling.py runs workloads
// beside it to put Proton's PC sampling in proportion. An instrument, not product.
#pragma once

#include <cstdint>
#include <string>

namespace proton::bench {

struct PcFloorConfig {
  uint32_t period_log2 = 16;
  uint64_t buffer_bytes = uint64_t{4} << 20;
  uint64_t scratch_bytes = uint64_t{8} << 20;
  uint32_t sleep_span_ms = 20;
  uint32_t drain_ms = 20;
};

struct PcFloorCounts {
  uint64_t drains = 0;
  uint64_t get_data_calls = 0;
  uint64_t samples = 0;  // totalSamples summed
  uint64_t pc_records = 0;
  uint64_t buffer_full = 0;  // hardwareBufferFull seen
  uint64_t dropped = 0;
  uint32_t stall_reasons = 0;
};

/// Enables PC sampling on the calling thread's current CUDA context. False with `why`.
bool pc_floor_start(const PcFloorConfig& config, std::string& why);
/// Stops the thread, drains, disables; returns what was counted.
PcFloorCounts pc_floor_stop();

}  // namespace proton::bench
