// The PC-sampling floor: the least any client of CUPTI's PC-sampling API can cost.
//
// Continuous mode on the current context, configured by the product's own helper
// (backends/cupti/pc_sampling_setup.h), no start/stop control, no synchronization, a thread of
// its own calling cuptiPCSamplingGetData every drain_ms and counting what it gets: nothing else
// (no kernel activity, no source mapping, no tree). bench/pc_sampling.py runs workloads beside
// it to put Proton's PC sampling in proportion. An instrument, not product.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proton::bench {

struct PcFloorConfig {
  uint32_t period_log2 = 16;
  uint64_t buffer_bytes = uint64_t{4} << 20;
  uint64_t scratch_bytes = uint64_t{8} << 20;
  uint32_t sleep_span_ms = 20;
  uint32_t drain_ms = 20;
  bool log = false;  // keep one PcFloorEvent per GetData call (at most 4096)
  // Start/stop control: stop pauses collection and leaves the context enabled; the next start
  // on the same context resumes it (as Proton's sessions after the first do).
  bool keep_enabled = false;
};

/// One GetData answer, for reading CUPTI's behaviour (a full buffer, a live period change).
struct PcFloorEvent {
  double t_ms = 0;  // since start
  int result = 0;   // CUptiResult
  bool buffer_full = false;
  uint64_t samples = 0;  // totalSamples
  uint64_t pcs = 0;      // totalNumPcs
  uint64_t remaining = 0;
};

struct PcFloorCounts {
  uint64_t drains = 0;
  uint64_t get_data_calls = 0;
  uint64_t samples = 0;  // totalSamples summed, GetData and what CUPTI handed over at disable
  uint64_t pc_records = 0;
  uint64_t buffer_full = 0;   // answers that said the hardware buffer was full
  uint64_t oom_returns = 0;   // of those, GetData returning CUPTI_ERROR_OUT_OF_MEMORY
  uint64_t other_errors = 0;  // GetData failures of any other kind
  uint64_t dropped = 0;
  uint64_t samples_at_disable = 0;
  uint32_t stall_reasons = 0;
  double enable_ms = 0;   // cuptiPCSamplingEnable + stall reasons + configuration
  double disable_ms = 0;  // cuptiPCSamplingDisable
  std::vector<PcFloorEvent> events;
};

/// Enables PC sampling on the calling thread's current CUDA context. False with `why`.
bool pc_floor_start(const PcFloorConfig& config, std::string& why);
/// Sets the period on the enabled context (CUPTI's answer, as an int): does CUPTI take a
/// period change while sampling runs?
int pc_floor_set_period(uint32_t period_log2);
/// Stops the thread, drains, disables; returns what was counted.
PcFloorCounts pc_floor_stop();

}  // namespace proton::bench
