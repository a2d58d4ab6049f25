// Turning CUPTI's continuous PC sampling on and off for one context, and reading one GetData
// answer: the CUPTI calls the product (pc_sampling.cpp) and the bench floor
// (bench/native/pc_floor.cpp) share, so that the floor measures exactly the configuration the
// product runs, and a fix to one reaches both.
//
// Continuous mode, parsed output, every stall reason: CUPTI samples every kernel of the
// context with nothing done per launch. With start_stop (the bench floor's keep_enabled),
// collection is started at enable and can be paused and resumed while the context stays
// enabled. Measured on an H100 (CUDA 13): a context disabled and enabled again after kernels
// ran in between returns every later sample as "non-user" (no PC records), while a paused and
// resumed one keeps its records; but a context with PC sampling enabled makes CUPTI refuse a
// new session's kernel tracing and launch callbacks, so the product disables at a session's
// end and says when a later session got no records (docs/pc-sampling.md, "Several sessions").
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cupti/cupti_api.h"

namespace proton::cupti {

struct PcContinuousSettings {
  uint32_t period_log2 = 16;                   // 2^N cycles between two samples
  uint64_t buffer_bytes = uint64_t{4} << 20;   // hardware buffer (CUPTI's default: 512 MB)
  uint64_t scratch_bytes = uint64_t{8} << 20;  // decoded records between two GetData calls
  uint32_t sleep_span_ms = 20;                 // CUPTI's decode threads (its default: 100 ms)
  bool start_stop = false;  // start/stop control on, collection started at enable
};

/// Whether this CUPTI has start/stop control (cuptiPCSamplingStart/Stop).
inline bool has_pc_start_stop(const CuptiApi& api) {
  return api.cuptiPCSamplingStart != nullptr && api.cuptiPCSamplingStop != nullptr;
}

/// A CUpti_PCSamplingData with the records and stall slots it points to. CUPTI writes counts
/// into it; reset() before each GetData restores what CUPTI reads.
struct PcDataBuffer {
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> stalls;
  CUpti_PCSamplingData data{};
  size_t stalls_per_pc = 0;

  void init(size_t n_pcs, size_t n_reasons);
  void reset();
};

/// CUPTI's stall reasons for a context, in CUPTI's order: hardware index and name.
struct PcStallReasons {
  std::vector<uint32_t> indices;
  std::vector<std::string> names;
};

/// Enables PC sampling on `ctx`, reads its stall reasons into `reasons`, sizes `at_disable`
/// (pcs_per_call records) and configures continuous collection with `settings`, CUPTI filling
/// `at_disable` with what it still holds when sampling is disabled. On failure sampling is
/// disabled again and `why` is one line naming the refused call or attribute.
bool enable_continuous_pc_sampling(const CuptiApi& api, CUcontext ctx,
                                   const PcContinuousSettings& settings, size_t pcs_per_call,
                                   PcDataBuffer& at_disable, PcStallReasons& reasons,
                                   std::string& why);

/// Sets the sampling period of an enabled context; CUPTI's answer.
CUptiResult set_pc_sampling_period(const CuptiApi& api, CUcontext ctx, uint32_t period_log2);

/// A context enabled with start_stop: stops collection (the context stays enabled; what CUPTI
/// decoded is still read by GetData), or starts it again with `settings` (period, buffers and
/// sleep span set anew while it is stopped). CUPTI's answer.
CUptiResult pause_pc_sampling(const CuptiApi& api, CUcontext ctx);
CUptiResult resume_pc_sampling(const CuptiApi& api, CUcontext ctx,
                               const PcContinuousSettings& settings);

/// Disables PC sampling on `ctx` (CUPTI then fills the at_disable buffer); CUPTI's answer.
CUptiResult disable_pc_sampling(const CuptiApi& api, CUcontext ctx);

/// What one cuptiPCSamplingGetData answer means.
enum class PcGetDataOutcome {
  kData,        // records (possibly none) to translate; more may remain
  kBufferFull,  // the hardware buffer filled: CUPTI dropped what was in it
  kFailed,      // any other error: nothing to read this time
};
/// CUPTI reports a full hardware buffer two ways (cupti_pcsampling.h): GetData returns
/// CUPTI_ERROR_OUT_OF_MEMORY, and hardwareBufferFull is set. Either one is a full buffer; the
/// error must not be read as "nothing this time".
PcGetDataOutcome classify_get_data(CUptiResult result, const CUpti_PCSamplingData& data);

/// The message for a failed PC-sampling call, with what the user can do about the causes
/// particular to PC sampling.
std::string pc_sampling_error(const CuptiApi& api, const char* call, CUptiResult result);

}  // namespace proton::cupti
