// What the Python module may ask about hardware counters, without CUPTI's headers (the module
// is compiled without them; see diagnostics.h for the same arrangement).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proton::cupti {

/// The base metrics device 0 offers to the Range Profiler (`pm` false) or PM sampling, and
/// its chip name: what proton.counters.list_metrics() shows. Loads CUPTI and the driver.
bool list_counter_metrics(bool pm, std::string& chip, std::vector<std::string>& out,
                          std::string& why);

/// Collection statistics of the running (or last stopped) per-kernel counters run.
struct CounterRunStats {
  uint64_t ranges = 0;          // ranges pushed (user) or launches seen (auto)
  uint64_t batches = 0;         // decodes
  uint64_t decode_ns = 0;       // stopping, decoding and restarting, on launching threads
  uint64_t evaluated = 0;       // ranges turned into values
  uint64_t dropped_ranges = 0;  // reported by CUPTI, or unmatched
  uint64_t errors = 0;          // failed CUPTI calls after start
};
CounterRunStats counter_run_stats();

/// PM sampling statistics of the running (or last stopped) sampler.
struct PmRunStats {
  uint64_t samples = 0;          // samples decoded and delivered
  uint64_t decodes = 0;          // cuptiPmSamplingDecodeData calls
  uint64_t overflows = 0;        // the hardware buffer filled before we decoded it
  uint64_t errors = 0;           // failed CUPTI calls after start
  uint64_t decode_ns = 0;        // our thread's time decoding, evaluating and delivering
  uint64_t evaluate_ns = 0;      // of which evaluating samples into metric values
  uint64_t hardware_buffer = 0;  // bytes
  uint64_t image_bytes = 0;      // the counter-data image we decode into
  uint64_t interval_ns = 0;
};
PmRunStats pm_run_stats();

}  // namespace proton::cupti
