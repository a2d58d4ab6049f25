// The floor for mode="counters": a minimal client of CUPTI PM sampling with no profiler logic
// (no kernel attribution, no split, no tree), to measure what sampling itself costs.
//
// It enables PM sampling on device 0 through the same calls as Proton's sampler
// (backends/cupti/pm_sampling_setup.h): our default metrics resolved as we resolve them unless
// `metrics` names others, our buffer sizes for the interval unless the caller names others. A
// thread of its own decodes the hardware buffer every `decode_ms`
// and (with `evaluate`) turns each sample into metric values, as Proton's sampler does. With
// CUPTI's kernel-activity floor started beside it (bench/native/cupti_floor.h) it is the floor
// of Proton's default counters mode: kernel records plus samples, nothing joined.
//
// It also reports the process's resident memory after each setup step, so that the memory
// of counters can be told apart: the profiler host (CUPTI's metric database), the hardware
// buffer, the counter-data image.
//
// One PM-sampling client per device: run it in a process without a Proton counters session.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace proton::bench {

struct PmFloorConfig {
  std::vector<std::string> metrics;  // empty: our default set
  uint32_t interval_us = 250;
  uint64_t hardware_buffer = 0;  // bytes; 0: ours for the interval
  uint32_t image_samples = 0;    // samples the counter-data image holds per decode; 0: ours
  uint32_t decode_ms = 20;
  bool evaluate = true;     // metric values per sample (else decode only)
  size_t keep_samples = 0;  // keep this many (start, end, values) for the caller
};

struct PmFloorStats {
  uint64_t samples = 0;
  uint64_t decodes = 0;
  uint64_t overflows = 0;
  uint64_t errors = 0;
  uint64_t decode_ns = 0;    // the thread's time in decode + evaluate
  uint64_t evaluate_ns = 0;  // of which evaluating
  uint64_t image_bytes = 0;
  uint32_t passes = 0;
  std::vector<std::string> metrics;  // the metrics sampled, in the order of `totals`
  std::vector<double> totals;        // per metric: the sum over samples (a sanity check)
  std::vector<std::pair<std::string, int64_t>> rss_kb;  // VmRSS after each setup step
  std::vector<std::vector<double>> kept;                // [start_ns, end_ns, values...]
};

/// Starts sampling. Returns false with `why` set when CUPTI, the GPU or a metric refuses.
bool pm_floor_start(const PmFloorConfig& config, std::string& why);
PmFloorStats pm_floor_stop();

}  // namespace proton::bench
