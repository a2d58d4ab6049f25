// Counters of PC sampling, without CUPTI headers so the Python module can include them.
#pragma once

#include <cstdint>
#include <string>

namespace proton::cupti {

struct PcSamplingStats {
  bool running = false;
  std::string error;         // why PC sampling is off (or was turned off), "" when fine
  uint32_t period_log2 = 0;  // current sampling period, log2 of cycles
  uint32_t start_period_log2 = 0;
  uint32_t asked_period_log2 = 0;  // what the options asked for (0: automatic)
  uint32_t next_period_log2 = 0;   // where the next session starts after a full buffer (0: none)
  uint64_t buffer_bytes = 0;       // hardware buffer
  uint64_t scratch_bytes = 0;
  uint32_t sleep_span_ms = 0;
  uint32_t stall_reasons = 0;
  uint64_t contexts = 0;  // contexts sampled
  uint64_t drains = 0;    // GetData rounds
  uint64_t get_data_calls = 0;
  uint64_t samples = 0;  // samples decoded (all reasons of all PCs)
  uint64_t pc_records = 0;
  uint64_t buffer_full = 0;  // GetData calls that reported hardwareBufferFull
  uint64_t dropped = 0;      // droppedSamples reported by CUPTI
  uint64_t non_user = 0;     // nonUsrKernelsTotalSamples
  // Every sample came back as non-user in a session after an earlier one of this process (the
  // CUPTI behaviour docs/pc-sampling.md describes under "Several sessions"); said on stderr.
  bool all_non_user_after_earlier = false;
  uint64_t get_data_errors = 0;  // GetData calls that failed (other than a full buffer)
  uint64_t bad_records = 0;
  uint64_t binaries = 0;  // cubins kept for line mapping
  uint64_t binary_bytes = 0;
  uint64_t line_lookups = 0;  // cuptiGetSassToSourceCorrelation calls
  double drain_ms_total = 0;  // time our thread spent in GetData + translation
  double enable_ms = 0;       // in cuptiPCSamplingEnable + configuration, all contexts
  double disable_ms = 0;      // in cuptiPCSamplingDisable
};

PcSamplingStats pc_sampling_stats();

}  // namespace proton::cupti
