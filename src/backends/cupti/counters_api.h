// Typed table of the CUPTI profiling entry points behind hardware counters:
// profiler host (metric lists, config images, evaluation), Range Profiler, PM sampling.
//
// Resolved from the libcupti that load_cupti() already opened (same file, so the same copy of
// CUPTI's state), each declared with decltype of its header prototype like cupti_api.h's
// table. Kept apart from that table: these exist only in CUDA 12.6+ and a missing one must
// turn off counters, never kernel timing.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>

#include "backends/cupti/cupti_api.h"

namespace proton::cupti {

#define PROTON_COUNTERS_CUPTI(X)                  \
  X(cuptiProfilerInitialize)                      \
  X(cuptiProfilerDeInitialize)                    \
  X(cuptiDeviceGetChipName)                       \
  X(cuptiProfilerGetCounterAvailability)          \
  X(cuptiProfilerDeviceSupported)                 \
  X(cuptiProfilerHostInitialize)                  \
  X(cuptiProfilerHostDeinitialize)                \
  X(cuptiProfilerHostGetBaseMetrics)              \
  X(cuptiProfilerHostGetSubMetrics)               \
  X(cuptiProfilerHostGetMetricProperties)         \
  X(cuptiProfilerHostConfigAddMetrics)            \
  X(cuptiProfilerHostGetConfigImageSize)          \
  X(cuptiProfilerHostGetConfigImage)              \
  X(cuptiProfilerHostGetNumOfPasses)              \
  X(cuptiProfilerHostEvaluateToGpuValues)         \
  X(cuptiProfilerHostGetRangeName)                \
  X(cuptiRangeProfilerSetConfig)                  \
  X(cuptiRangeProfilerEnable)                     \
  X(cuptiRangeProfilerDisable)                    \
  X(cuptiRangeProfilerStart)                      \
  X(cuptiRangeProfilerStop)                       \
  X(cuptiRangeProfilerPushRange)                  \
  X(cuptiRangeProfilerPopRange)                   \
  X(cuptiRangeProfilerDecodeData)                 \
  X(cuptiRangeProfilerGetCounterDataSize)         \
  X(cuptiRangeProfilerCounterDataImageInitialize) \
  X(cuptiRangeProfilerGetCounterDataInfo)         \
  X(cuptiRangeProfilerCounterDataGetRangeInfo)    \
  X(cuptiPmSamplingSetConfig)                     \
  X(cuptiPmSamplingEnable)                        \
  X(cuptiPmSamplingDisable)                       \
  X(cuptiPmSamplingStart)                         \
  X(cuptiPmSamplingStop)                          \
  X(cuptiPmSamplingDecodeData)                    \
  X(cuptiPmSamplingGetCounterAvailability)        \
  X(cuptiPmSamplingGetCounterDataSize)            \
  X(cuptiPmSamplingCounterDataImageInitialize)    \
  X(cuptiPmSamplingGetCounterDataInfo)            \
  X(cuptiPmSamplingCounterDataGetSampleInfo)

#define PROTON_COUNTERS_DRIVER(X) \
  X(cuCtxPushCurrent)             \
  X(cuCtxPopCurrent)              \
  X(cuCtxGetCurrent)              \
  X(cuCtxGetDevice)               \
  X(cuDeviceGetCount)             \
  X(cuCtxSynchronize)             \
  X(cuDeviceGet)                  \
  X(cuDevicePrimaryCtxRetain)     \
  X(cuDevicePrimaryCtxRelease)

#define PROTON_COUNTERS_ENTRY(name) decltype(&::name) name = nullptr;

struct CountersApi {
  PROTON_COUNTERS_CUPTI(PROTON_COUNTERS_ENTRY)
  PROTON_COUNTERS_DRIVER(PROTON_COUNTERS_ENTRY)
  const CuptiApi* cupti = nullptr;  // for cuptiGetResultString in messages
};

#undef PROTON_COUNTERS_ENTRY

/// Resolves the table from the loaded libcupti and libcuda (once per process). Returns nullptr
/// and sets `why` naming the first missing entry (a CUPTI older than 12.6) or library.
const CountersApi* load_counters_api(const CuptiApi& cupti, std::string& why);

/// "cuptiX failed: <CUPTI's wording>" for messages.
std::string counters_error(const CountersApi& api, const char* call, CUptiResult r);

/// Starts the profiler interface once per process (cuptiProfilerInitialize).
bool ensure_profiler_initialized(const CountersApi& api, std::string& why);

}  // namespace proton::cupti
