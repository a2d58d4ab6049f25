#include "backends/cupti/host_calls.h"

#include <array>
#include <atomic>

#include "attribution/host_call.h"
#include "attribution/launch_stage.h"
#include "backends/cupti/cupti_errors.h"
#include "common/clock.h"

namespace proton::cupti {

namespace {

constexpr CUpti_CallbackDomain kHostRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kHostDriver = CUPTI_CB_DOMAIN_DRIVER_API;

#define PROTON_RUNTIME_ENTRY(id) HostCallCallback{kHostRuntime, id},
#define PROTON_DRIVER_ENTRY(id) HostCallCallback{kHostDriver, id},
constexpr std::array kHostCallIds = {PROTON_HOST_CALL_RUNTIME_IDS(PROTON_RUNTIME_ENTRY)
                                         PROTON_HOST_CALL_DRIVER_IDS(PROTON_DRIVER_ENTRY)};
#undef PROTON_RUNTIME_ENTRY
#undef PROTON_DRIVER_ENTRY

// What a call's parameters say. Pointers are addresses (host or device, unified addressing).
struct HostCallArgs {
  bool known = false;
  HostCallKind kind = HostCallKind::kStreamSync;
  bool async = false;
  uint64_t stream = 0;
  uint64_t dst = 0;
  uint64_t src = 0;
  uint64_t bytes = 0;
  CopyDirection direction = CopyDirection::kUnknown;  // kUnknown: from the pointers
};

uint64_t address_of(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

CopyDirection direction_of(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return CopyDirection::kHtoD;
    case cudaMemcpyDeviceToHost:
      return CopyDirection::kDtoH;
    case cudaMemcpyDeviceToDevice:
      return CopyDirection::kDtoD;
    case cudaMemcpyHostToHost:
      return CopyDirection::kHtoH;
    default:
      return CopyDirection::kUnknown;  // cudaMemcpyDefault: the pointers say
  }
}

template <typename P>
HostCallArgs runtime_copy(const void* params, bool async) {
  const auto* p = static_cast<const P*>(params);
  HostCallArgs a{true, HostCallKind::kCopy, async};
  a.dst = address_of(p->dst);
  a.src = address_of(p->src);
  a.bytes = p->count;
  a.direction = direction_of(p->kind);
  if constexpr (requires { p->stream; }) a.stream = address_of(p->stream);
  return a;
}

template <typename P>
HostCallArgs driver_copy(const void* params, bool async, CopyDirection direction) {
  const auto* p = static_cast<const P*>(params);
  HostCallArgs a{true, HostCallKind::kCopy, async};
  a.bytes = p->ByteCount;
  a.direction = direction;
  if constexpr (requires { p->dst; }) {
    a.dst = p->dst;
    a.src = p->src;
  }
  if constexpr (requires { p->dstHost; }) a.dst = address_of(p->dstHost);
  if constexpr (requires { p->srcHost; }) a.src = address_of(p->srcHost);
  if constexpr (requires { p->dstDevice; }) a.dst = p->dstDevice;
  if constexpr (requires { p->srcDevice; }) a.src = p->srcDevice;
  if constexpr (requires { p->hStream; }) a.stream = address_of(p->hStream);
  return a;
}

HostCallArgs sync_args(HostCallKind kind, uint64_t stream = 0) {
  HostCallArgs a{true, kind};
  a.stream = stream;
  return a;
}

// The call's kind and arguments; known = false for an id that is not a host call (or no
// parameters to read).
HostCallArgs args_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params) {
  using K = HostCallKind;
  using D = CopyDirection;
  if (domain == kHostRuntime) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
      case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
        return sync_args(K::kDeviceSync);
      case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
        return sync_args(K::kEventSync);
      default:
        break;
    }
    if (params == nullptr) return {};
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
        return sync_args(
            K::kStreamSync,
            address_of(static_cast<const cudaStreamSynchronize_v3020_params*>(params)->stream));
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
        return sync_args(
            K::kStreamSync,
            address_of(
                static_cast<const cudaStreamSynchronize_ptsz_v7000_params*>(params)->stream));
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
        return runtime_copy<cudaMemcpy_v3020_params>(params, false);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000:
        return runtime_copy<cudaMemcpy_ptds_v7000_params>(params, false);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
        return runtime_copy<cudaMemcpyAsync_v3020_params>(params, true);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
        return runtime_copy<cudaMemcpyAsync_ptsz_v7000_params>(params, true);
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000: {
        const auto* p = static_cast<const cudaMemcpyPeer_v4000_params*>(params);
        HostCallArgs a{true, K::kCopy, false};
        a.dst = address_of(p->dst);
        a.src = address_of(p->src);
        a.bytes = p->count;
        a.direction = D::kDtoD;
        return a;
      }
      default:
        return {};
    }
  }
  if (domain != kHostDriver) return {};
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
#if CUPTI_API_VERSION >= 130000
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
#endif
      return sync_args(K::kDeviceSync);
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      return sync_args(K::kEventSync);
    default:
      break;
  }
  if (params == nullptr) return {};
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
      return sync_args(K::kStreamSync,
                       address_of(static_cast<const cuStreamSynchronize_params*>(params)->hStream));
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      return sync_args(
          K::kStreamSync,
          address_of(static_cast<const cuStreamSynchronize_ptsz_params*>(params)->hStream));
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
      return driver_copy<cuMemcpy_params>(params, false, D::kUnknown);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds:
      return driver_copy<cuMemcpy_ptds_params>(params, false, D::kUnknown);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
      return driver_copy<cuMemcpyAsync_params>(params, true, D::kUnknown);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
      return driver_copy<cuMemcpyAsync_ptsz_params>(params, true, D::kUnknown);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
      return driver_copy<cuMemcpyHtoD_v2_params>(params, false, D::kHtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds:
      return driver_copy<cuMemcpyHtoD_v2_ptds_params>(params, false, D::kHtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
      return driver_copy<cuMemcpyDtoH_v2_params>(params, false, D::kDtoH);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds:
      return driver_copy<cuMemcpyDtoH_v2_ptds_params>(params, false, D::kDtoH);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
      return driver_copy<cuMemcpyDtoD_v2_params>(params, false, D::kDtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds:
      return driver_copy<cuMemcpyDtoD_v2_ptds_params>(params, false, D::kDtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
      return driver_copy<cuMemcpyHtoDAsync_v2_params>(params, true, D::kHtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz:
      return driver_copy<cuMemcpyHtoDAsync_v2_ptsz_params>(params, true, D::kHtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
      return driver_copy<cuMemcpyDtoHAsync_v2_params>(params, true, D::kDtoH);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz:
      return driver_copy<cuMemcpyDtoHAsync_v2_ptsz_params>(params, true, D::kDtoH);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer:
      return driver_copy<cuMemcpyPeer_params>(params, false, D::kDtoD);
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeer_ptds:
      return driver_copy<cuMemcpyPeer_ptds_params>(params, false, D::kDtoD);
    default:
      return {};
  }
}

std::atomic<PointerAttributeFn> g_pointer_query{nullptr};
std::atomic<uint64_t> g_host_call_errors{0};  // relaxed counter

enum class Memory : uint8_t { kUnknown, kDevice, kPinned, kPageable };

// What an address is, asked of the driver (copies only: about a microsecond).
Memory memory_of(uint64_t ptr) {
  PointerAttributeFn query = g_pointer_query.load(std::memory_order_acquire);
  if (query == nullptr || ptr == 0) return Memory::kUnknown;
  unsigned int type = 0;
  CUresult r = query(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, static_cast<CUdeviceptr>(ptr));
  // Memory no context allocated, mapped or registered: plain pageable host memory.
  if (r == CUDA_ERROR_INVALID_VALUE) return Memory::kPageable;
  if (r != CUDA_SUCCESS) return Memory::kUnknown;
  return type == CU_MEMORYTYPE_HOST ? Memory::kPinned : Memory::kDevice;  // managed: device
}

bool on_host(CopyDirection d, bool destination) {
  if (d == CopyDirection::kHtoH) return true;
  return destination ? d == CopyDirection::kDtoH : d == CopyDirection::kHtoD;
}

// The direction (from the pointers where the call did not say) and the host side's memory.
void classify(const HostCallArgs& a, HostCall& c) {
  c.direction = a.direction;
  if (c.direction == CopyDirection::kDtoD) {
    c.memory = HostMemory::kNone;
    return;
  }
  Memory dst = Memory::kUnknown;
  Memory src = Memory::kUnknown;
  if (c.direction == CopyDirection::kUnknown || on_host(c.direction, true)) dst = memory_of(a.dst);
  if (c.direction == CopyDirection::kUnknown || on_host(c.direction, false)) src = memory_of(a.src);
  if (c.direction == CopyDirection::kUnknown && dst != Memory::kUnknown &&
      src != Memory::kUnknown) {
    bool dst_host = dst != Memory::kDevice;
    bool src_host = src != Memory::kDevice;
    c.direction = src_host ? (dst_host ? CopyDirection::kHtoH : CopyDirection::kHtoD)
                           : (dst_host ? CopyDirection::kDtoH : CopyDirection::kDtoD);
  }
  if (dst == Memory::kPageable || src == Memory::kPageable) {
    c.memory = HostMemory::kPageable;
  } else if (dst == Memory::kPinned || src == Memory::kPinned) {
    c.memory = HostMemory::kPinned;
  }
}

// One thread's host call in progress and the last copy it kept. Touched only by host calls,
// never by a launch: a thread_local (found the slow way) is cheap enough here.
struct ThreadCalls {
  uint64_t start_ns = 0;
  // The last copy kept on this thread, while a stream synchronize right after it may be its
  // wait: its stream, where the thread's tag queue stood after it (a launch or scope event
  // since moves it), and what it was.
  bool copy_open = false;
  uint64_t copy_stream = 0;
  const TagBlock* copy_block = nullptr;
  uint32_t copy_count = 0;
  HostCall copy;
};
thread_local ThreadCalls t_calls;

void stage_call(const HostCall& c) noexcept {
  try {
    LaunchStage::host_call(c);
  } catch (...) {
    g_host_call_errors.fetch_add(1, std::memory_order_relaxed);  // never unwind through CUPTI
  }
}

}  // namespace

std::span<const HostCallCallback> host_call_callbacks() {
  return kHostCallIds;
}

bool is_host_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  // A switch, not a walk of kHostCallIds: graph launches ask too, once per replay.
  if (domain == kHostRuntime) {
    switch (cbid) {
      PROTON_HOST_CALL_RUNTIME_IDS(PROTON_HOST_CALL_CASE)
      return true;
      default:
        return false;
    }
  }
  if (domain != kHostDriver) return false;
  switch (cbid) {
    PROTON_HOST_CALL_DRIVER_IDS(PROTON_HOST_CALL_CASE)
    return true;
    default:
      return false;
  }
}

int set_host_call_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                            std::string& error) {
  int done = 0;
  for (const HostCallCallback& c : kHostCallIds) {
    done += set_callback(api, subscriber, enable, c.domain, c.cbid, error) ? 1 : 0;
  }
  return done;
}

void set_host_call_pointer_query(PointerAttributeFn fn) {
  g_pointer_query.store(fn, std::memory_order_release);
}

bool host_call_enter(hot::Thread& t, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (!is_host_call(domain, cbid)) return false;
  if (LaunchStage::active_sessions.load(std::memory_order_relaxed) == 0 ||
      ProfilerHostCalls::active()) {
    return true;
  }
  t.exit_work |= hot::kExitHostCall;
  t_calls.start_ns = steady_ns();  // last: the call starts now
  return true;
}

void host_call_exit(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                    const CUpti_CallbackData* cb) noexcept {
  const uint64_t end = steady_ns();  // first: the call ended
  ThreadCalls& tc = t_calls;
  HostCallArgs a = args_of(domain, cbid, cb->functionParams);
  if (!a.known) return;  // an exit whose enter was another call's (a pause in between)
  HostCall c;
  c.kind = a.kind;
  c.start_ns = tc.start_ns;
  c.duration_ns = end > tc.start_ns ? end - tc.start_ns : 0;
  hot::Thread& t = hot::this_thread();
  if (a.kind == HostCallKind::kCopy) {
    classify(a, c);
    // An asynchronous copy returns at once unless the driver had to stage pageable memory, or
    // copies host to host: those are the ones the host waited for.
    bool blocked =
        !a.async || c.memory == HostMemory::kPageable || c.direction == CopyDirection::kHtoH;
    tc.copy_open = false;
    if (!blocked) return;
    c.bytes = a.bytes;
    stage_call(c);
    tc.copy_open = true;
    tc.copy_stream = a.stream;
    tc.copy_block = t.tags.block;
    tc.copy_count = t.tags.count;
    tc.copy = c;
    return;
  }
  // A stream synchronize right after a kept copy on the same stream, nothing launched between:
  // the copy's own wait (tensor.cuda() of pageable memory is a copy and this wait).
  if (a.kind == HostCallKind::kStreamSync && tc.copy_open && tc.copy_stream == a.stream &&
      tc.copy_block == t.tags.block && tc.copy_count == t.tags.count &&
      !hot::globals.kernel_records_off.load(std::memory_order_relaxed)) {
    c.kind = HostCallKind::kCopy;
    c.direction = tc.copy.direction;
    c.memory = tc.copy.memory;
    c.continued = true;
  }
  tc.copy_open = false;
  stage_call(c);
}

uint64_t host_call_errors() {
  return g_host_call_errors.load(std::memory_order_relaxed);
}

}  // namespace proton::cupti
