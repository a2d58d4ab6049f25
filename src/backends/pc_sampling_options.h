// Options of PC sampling (mode="pcsampling"), vendor-neutral: the session options parse them
// from the mode string (options/mode.h), a backend that samples PCs reads them.
#pragma once

#include <cstdint>

namespace proton {

struct PcSamplingOptions {
  bool enabled = false;
  // The interval asked for, in cycles (0: not given). triton.profiler's PCSampling(interval=N)
  // spells cycles: period_log2 rounds it up to a power of two.
  uint64_t interval = 0;
  // Sampling period as log2 of cycles (CUPTI takes 5..31). 0: automatic, see pc-sampling.md.
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

}  // namespace proton
