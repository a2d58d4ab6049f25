// Options of PC sampling (mode="pcsampling"), vendor-neutral: the session layer parses them
// from the mode string, a backend that samples PCs reads them.
#pragma once

#include <cstdint>
#include <string>

namespace proton {

struct PcSamplingOptions {
  bool enabled = false;
  // Sampling period as log2 of cycles (CUPTI takes 5..31). 0: automatic, see pc-sampling.md.
  // triton.profiler's PCSampling(interval=N) spells cycles: N is rounded up to a power of two.
  uint32_t period_log2 = 0;
  // Hardware buffer bytes; 0: sized from the period (enough for kSafety sleep spans).
  uint64_t buffer_bytes = 0;
  // How often CUPTI's own decode thread wakes (its default is 100 ms: the hardware buffer must
  // hold that long, so a shorter span lets a small buffer keep up).
  uint32_t sleep_span_ms = 20;
  // How often our drain thread calls GetData.
  uint32_t drain_ms = 20;
  // Raise the period when the hardware buffer filled (samples lost), instead of going on
  // losing them.
  bool adapt = true;
  // Largest hardware buffer the automatic sizing may choose.
  uint64_t max_buffer_bytes = uint64_t{64} << 20;
  // Binaries kept for PC -> line mapping (copies of loaded cubins), oldest dropped beyond this.
  // (64 MB: the host-memory budget of PC sampling is 32 MB above CUPTI's own; binaries are
  // copied only while sampling, and Triton's cached ones only when a sample names them.)
  uint64_t binary_bytes = uint64_t{64} << 20;
};

/// "pcsampling", "pcsampling:interval=N", with more ":key=value" options (buffer_mb, sleep_ms,
/// drain_ms, adapt=0|1). `enabled` is false for any other mode. Throws std::invalid_argument
/// naming the option for a malformed one.
PcSamplingOptions parse_pc_sampling_mode(const std::string& mode);

/// The period (log2 cycles) for `interval` cycles: the next power of two, clamped to 5..31.
uint32_t pc_period_log2_for_interval(uint64_t interval);

}  // namespace proton
