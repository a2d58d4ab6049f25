// The vendor-neutral PC sample: what a backend's sampler hands the data layer.
//
// A sample aggregates, for one PC of one function of one loaded binary, how many times the
// hardware found a warp there and in which stall state, since the last drain. It carries no
// kernel launch: CUPTI's continuous mode reports correlationId 0, so attribution to call paths
// goes through the function (pc_attribution.h). The backend translates its records into these
// at the border (backends/cupti/pc_sampling_records.*) and resolves the source location there,
// because mapping a PC to a line needs the binary, a vendor object.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/ids.h"
#include "format/pc_stall_reasons.h"

namespace proton {

/// Samples of one stall reason at one PC. `reason` indexes PcStallTable (not the hardware's
/// own index, which the backend translates).
struct PcStall {
  uint32_t reason = 0;
  uint32_t samples = 0;
};

struct PcSample {
  uint64_t binary_id = 0;     // CUPTI: cubin CRC
  uint64_t pc_offset = 0;     // from the function's start
  NameId function = kNoName;  // interned function (kernel) name, the same id kernel records use
  // Interned "file:line@function" (inlined frames as "outer;inner"); kNoName when the binary
  // has no line table for this PC (cuBLAS without -lineinfo): the data layer then adds the
  // sample on the kernel node itself.
  NameId location = kNoName;
  uint32_t device = 0;
  uint32_t stall_begin = 0;  // index into PcSampleBatch::stalls
  uint32_t stall_count = 0;
};

/// One drain of the sampler: samples plus what the hardware said about losing some.
struct PcSampleBatch {
  std::shared_ptr<const PcStallTable> reasons;  // stall reason names of this collection
  std::vector<PcSample> samples;
  std::vector<PcStall> stalls;
  uint64_t buffer_full = 0;       // drains that found the hardware buffer full (samples lost)
  uint64_t dropped_samples = 0;   // samples the hardware or CUPTI reported dropped
  uint64_t non_user_samples = 0;  // samples in kernels CUPTI does not attribute to users

  void clear() {
    samples.clear();
    stalls.clear();
    buffer_full = dropped_samples = non_user_samples = 0;
  }
};

}  // namespace proton
