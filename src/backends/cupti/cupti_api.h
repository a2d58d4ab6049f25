// Typed tables of the CUPTI and CUDA driver functions the backend calls, dlopen'd once.
//
// Nothing links libcupti or libcuda: the core must import and run on machines without them.
// Each entry is declared with decltype of the header prototype, so a call through the table is
// type-checked exactly like a direct call, and a header/library mismatch in a signature is a
// compile error rather than a crash.
#pragma once

#include <cuda.h>
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <string>
#include <vector>

namespace proton::cupti {

// Functions every supported libcupti (CUDA 11.8+) exports.
#define PROTON_CUPTI_REQUIRED(X)       \
  X(cuptiGetVersion)                   \
  X(cuptiGetResultString)              \
  X(cuptiSubscribe)                    \
  X(cuptiUnsubscribe)                  \
  X(cuptiEnableCallback)               \
  X(cuptiActivityEnable)               \
  X(cuptiActivityDisable)              \
  X(cuptiActivityRegisterCallbacks)    \
  X(cuptiActivityGetNextRecord)        \
  X(cuptiActivityGetNumDroppedRecords) \
  X(cuptiActivityFlushAll)             \
  X(cuptiFinalize)

// Newer entry points, absent from older libraries: null when missing. (The graph id getters
// exist since CUDA 11-12, but a graph-less CUPTI must not stop kernel timing.)
#define PROTON_CUPTI_OPTIONAL(X)            \
  X(cuptiSubscribe_v2)                      \
  X(cuptiGetGraphId)                        \
  X(cuptiGetGraphNodeId)                    \
  X(cuptiGetGraphExecId)                    \
  X(cuptiGetTimestamp)                      \
  X(cuptiActivityEnableRuntimeApi)          \
  X(cuptiActivityEnableDriverApi)           \
  X(cuptiActivityPushExternalCorrelationId) \
  X(cuptiActivityPopExternalCorrelationId)

// PC sampling (pc_sampling.*, mode="pcsampling"): CUDA 11.3+; null when absent, and then PC
// sampling says so and kernel timing goes on.
#define PROTON_CUPTI_PC_SAMPLING(X)           \
  X(cuptiPCSamplingEnable)                    \
  X(cuptiPCSamplingDisable)                   \
  X(cuptiPCSamplingSetConfigurationAttribute) \
  X(cuptiPCSamplingGetData)                   \
  X(cuptiPCSamplingGetNumStallReasons)        \
  X(cuptiPCSamplingGetStallReasons)           \
  X(cuptiPCSamplingStart)                     \
  X(cuptiPCSamplingStop)                      \
  X(cuptiGetSassToSourceCorrelation)          \
  X(cuptiGetCubinCrc)

#define PROTON_DRIVER_REQUIRED(X) \
  X(cuInit)                       \
  X(cuDriverGetVersion)           \
  X(cuDeviceGetCount)             \
  X(cuDeviceGet)                  \
  X(cuDeviceGetAttribute)         \
  X(cuGetErrorString)             \
  X(cuCtxGetCurrent)              \
  X(cuCtxSynchronize)             \
  X(cuPointerGetAttribute)

#define PROTON_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;

struct CuptiApi {
  PROTON_CUPTI_REQUIRED(PROTON_DECLARE_ENTRY)
  PROTON_CUPTI_OPTIONAL(PROTON_DECLARE_ENTRY)
  PROTON_CUPTI_PC_SAMPLING(PROTON_DECLARE_ENTRY)
  std::string path;  // the file that was loaded, for messages
};

struct DriverApi {
  PROTON_DRIVER_REQUIRED(PROTON_DECLARE_ENTRY)
};

#undef PROTON_DECLARE_ENTRY

/// Loads libcupti (once per process; a failed attempt may be retried after the search paths
/// change). `override_path`: the user's choice (BackendOptions::cupti_path), a file or a folder
/// holding libcupti, searched alone; empty: the usual search (CUDA_HOME, CUDA_PATH, wheels).
/// Returns nullptr and sets `why` when no usable copy is found. Never call from a CUPTI
/// callback: it reads the environment (CUDA_HOME) and takes a lock.
const CuptiApi* load_cupti(std::string& why, const std::string& override_path = {});

/// Loads the CUDA driver (libcuda.so.1) the same way.
const DriverApi* load_driver(std::string& why);

/// Extra folders to look in for libcupti, before the CUDA toolkit: each is tried as a folder
/// holding libcupti and as a Python site-packages root (wheel and Triton layouts). The Python
/// package passes its site-packages folders here before the first session starts.
void set_cupti_search_paths(std::vector<std::string> dirs);

/// The message for a failed CUPTI call: names the call, CUPTI's own wording, and what to do.
std::string cupti_error(const CuptiApi& api, const char* call, CUptiResult result);

/// Turns one callback id on or off; returns whether CUPTI took it. An id this libcupti predates
/// (CUPTI_ERROR_INVALID_PARAMETER) is passed over quietly; any other failure is kept in `error`
/// (the first only).
bool set_callback(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                  CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::string& error);

/// CUPTI has one global activity-buffer registration per process: the backend and the
/// benchmark floor both use it, so each claims it first. Returns false if `owner` cannot have
/// it (the other one holds it).
bool claim_activity(const char* owner, std::string& why);
void release_activity(const char* owner);

}  // namespace proton::cupti
