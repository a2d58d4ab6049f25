// Host calls that block: synchronizes and copies, timed from the API callbacks Proton already
// subscribes for launches (attribution/host_call.h says what is kept).
//
// CUPTI dispatches callbacks per id, so enabling these ids costs a launch nothing: only the calls
// below enter the subscriber. They enter it through the launch callback's rare branch (launch_api
// sees them as a fan-out of 0, as graph launches), which hands them here:
//   synchronize: cudaStreamSynchronize, cudaDeviceSynchronize (cudaThreadSynchronize),
//                cudaEventSynchronize and the driver's cuStreamSynchronize, cuCtxSynchronize,
//                cuEventSynchronize (with their _ptsz variants);
//   copy:        cudaMemcpy, cudaMemcpyAsync, cudaMemcpyPeer, and the driver's 1D copies
//                (cuMemcpy, cuMemcpyAsync, cuMemcpyHtoD/DtoH/DtoD and their Async forms, _v2,
//                _ptds/_ptsz; cuMemcpyPeer).
// Both domains are on whatever the launch callbacks' choice: a runtime call that enters the
// driver's callback, nested, is timed once, at the outermost call (the launch callback's nesting).
//
// At API enter: the steady clock (and a bit in hot::Thread::exit_work). At exit: the clock again,
// then, for copies only, what the host memory is: cuPointerGetAttribute(MEMORY_TYPE) on each
// host-side pointer (about a microsecond, paid by copy calls alone; memory the driver does not
// know is pageable). A synchronize is always kept; a synchronous copy too; an asynchronous copy
// only when it touched pageable memory (or host to host), which makes it synchronous; an
// asynchronous copy of pinned memory, which returns at once, is not kept.
#pragma once

#include <cupti.h>

#include <span>
#include <string>

#include "backends/cupti/cupti_api.h"
#include "common/hot.h"

// The ids, once: the callback list, is_host_call() and the launch callback's switch (which
// answers a fan-out of 0 for them) all expand these.
#define PROTON_HOST_CALL_RUNTIME_IDS(X)                        \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020)      \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020)      \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020)      \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000) \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020)       \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020)                 \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000)            \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020)            \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000)       \
  X(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000)

#if CUPTI_API_VERSION >= 130000
#define PROTON_HOST_CALL_CTX_SYNC_V2(X) X(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2)
#else
#define PROTON_HOST_CALL_CTX_SYNC_V2(X)
#endif

#define PROTON_HOST_CALL_DRIVER_IDS(X)                 \
  X(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize)          \
  PROTON_HOST_CALL_CTX_SYNC_V2(X)                      \
  X(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize)       \
  X(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz)  \
  X(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize)        \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpy)                  \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds)             \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync)             \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz)        \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2)           \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds)      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2)           \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds)      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2)           \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds)      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2)      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2)      \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz) \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer)              \
  X(CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds)

#define PROTON_HOST_CALL_CASE(id) case id:

namespace proton::cupti {

struct HostCallCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
};

/// Every callback id host-call timing enables.
std::span<const HostCallCallback> host_call_callbacks();

/// Whether (domain, cbid) is one of host_call_callbacks().
bool is_host_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/// Enables or disables the host-call callbacks (ids an older libcupti does not know are
/// skipped). Returns how many took effect; `error` gets the first failure.
int set_host_call_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                            std::string& error);

/// How copies learn what their host memory is: the driver's cuPointerGetAttribute (the backend
/// sets it at start; tests a fake). Null: the memory is unknown, and an asynchronous copy is
/// then not kept.
using PointerAttributeFn = decltype(&::cuPointerGetAttribute);
void set_host_call_pointer_query(PointerAttributeFn fn);

/// API enter of a call the launch callback does not tag (`t` is the calling thread's). Returns
/// false when (domain, cbid) is not a host call; true when it is, timed or not (not while no
/// session is active, nor on a thread inside ProfilerHostCalls).
bool host_call_enter(hot::Thread& t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/// API exit of a call whose enter set hot::kExitHostCall: stages the host call for the sessions
/// (LaunchStage::host_call). Never throws.
void host_call_exit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData* cb) noexcept;

/// Host calls lost to a failed allocation (a thread's first tag block): counted, not thrown.
uint64_t host_call_errors();

}  // namespace proton::cupti
