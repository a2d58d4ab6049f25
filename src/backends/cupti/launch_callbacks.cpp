#include "backends/cupti/launch_callbacks.h"
#include "backends/cupti/range_profiler.h"

#include <array>
#include <atomic>
#include <vector>

#include "attribution/graph_attribution.h"
#include "attribution/launch_stage.h"
#include "backends/cupti/graph_callbacks.h"
#include "backends/cupti/host_calls.h"
#include "backends/cupti/nvtx_callbacks.h"
#include "backends/cupti/pc_sampling.h"
#include "backends/instrumentation/instr_runtime.h"
#include "common/hot.h"
#include "context/thread_context.h"

namespace proton::cupti {

namespace {

constexpr CUpti_CallbackDomain kRuntime = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDriver = CUPTI_CB_DOMAIN_DRIVER_API;

constexpr std::array kCallbacks = {
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_v3020, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunch_ptsz_v7000, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                   false},
    // One launch, one kernel per device: fan-out unknown here.
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000,
                   true},
#if CUPTI_API_VERSION >= 130000
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, false},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, false},
#endif
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, true},
    LaunchCallback{kRuntime, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, true},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunch, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz, false},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice, true},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, true},
    LaunchCallback{kDriver, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, true},
};

// Nesting is tracked per thread (hot::Thread::nest_*) as (epoch, depth): depth counts launch
// APIs entered and not yet exited. A pause can disable callbacks between a thread's enter and
// exit, leaving its depth stuck; reset_launch_nesting() bumps hot::globals.callback_epoch,
// which invalidates every thread's count at once without touching other threads' storage.
std::atomic<uint64_t> g_errors{0};  // relaxed counter

// launch_fanout(), inlined into the callback: a switch the compiler turns into a few range and
// bit tests, never a call.
[[gnu::always_inline]] inline uint32_t fanout_of(CUpti_CallbackDomain domain,
                                                 CUpti_CallbackId cbid) {
  if (domain == kRuntime) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000:
        return 0;
      // Graph-creating APIs, subscribed only by mode="graph" (graph_callbacks.h): not launches.
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
        return 0;
        // Host calls (host_calls.h): synchronizes and copies, not launches.
        PROTON_HOST_CALL_RUNTIME_IDS(PROTON_HOST_CALL_CASE)
        return 0;
      default:
        return 1;
    }
  }
  // The driver launches torch and Triton make, first: whatever the cases below, the same two
  // compares as before the graph-creating APIs joined them.
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx) [[likely]] {
    return 1;
  }
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
      return 0;
    // Graph-creating APIs, subscribed only by mode="graph" (graph_callbacks.h): not launches.
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphCreate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphClone:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz:
      return 0;
      // Host calls (host_calls.h): synchronizes and copies, not launches.
      PROTON_HOST_CALL_DRIVER_IDS(PROTON_HOST_CALL_CASE)
      return 0;
    default:
      return 1;
  }
}

// Where a replayed graph kernel's regions go: where its kernel record goes. Once per replay
// site of a captured launch (graph_capture.cpp caches it).
ContextId replay_place(ContextId replay, ContextId capture) {
  std::vector<NameId> scratch;
  return replayed_path(replay, capture, scratch);
}

// Instrumentation: the launch now returning was given a profile-scratch slice (its allocator
// ran just before, on this thread); queue the slice's copy-back, now that the kernel is
// submitted. Out of line: only instrumented launches come here.
[[gnu::noinline, gnu::cold]] void instr_launch_exit(CUpti_CallbackDomain domain,
                                                    CUpti_CallbackId cbid,
                                                    const CUpti_CallbackData* cb) {
  uint64_t exec = 0;
  uint64_t graph_stream = 0;
  if (graph_launch_target(domain, cbid, cb->functionParams, exec, graph_stream)) {
    // A graph launch flagged at its enter: its captured instrumented launches' replays.
    try {
      instr::InstrRuntime::get().graph_launched(exec, graph_stream, ThreadContext::launch_context(),
                                                &replay_place);
    } catch (...) {
      g_errors.fetch_add(1, std::memory_order_relaxed);  // never unwind through CUPTI
    }
    return;
  }
  uint64_t function = 0;  // 0: not a launch we can read (the kernel is then counted unknown)
  uint64_t stream = 0;
  bool per_thread = false;  // a _ptsz entry point: stream 0 is the thread's default stream
  if (domain == kDriver && cb->functionParams != nullptr) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        per_thread = true;
        [[fallthrough]];
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: {
        const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
        function = reinterpret_cast<uint64_t>(p->f);
        stream = reinterpret_cast<uint64_t>(p->hStream);
        break;
      }
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        per_thread = true;
        [[fallthrough]];
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
        const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
        function = reinterpret_cast<uint64_t>(p->f);
        stream = p->config != nullptr ? reinterpret_cast<uint64_t>(p->config->hStream) : 0;
        break;
      }
      default:
        break;
    }
  }
  if (per_thread && stream == 0) stream = instr::InstrRuntime::kPerThreadStream;
  // A launch call that failed ran nothing: its slice may still hold an older launch's records.
  const bool launched = domain != kDriver || cb->functionReturnValue == nullptr ||
                        *static_cast<const CUresult*>(cb->functionReturnValue) == CUDA_SUCCESS;
  try {
    instr::InstrRuntime::get().launch_exit(
        function, stream, ThreadContext::launch_context(),
        LaunchStage::active_sessions.load(std::memory_order_relaxed), launched);
  } catch (...) {
    g_errors.fetch_add(1, std::memory_order_relaxed);  // never unwind through CUPTI
  }
}

// The exit of a call that set bits of hot::Thread::exit_work at its enter. Out of line: a plain
// launch sets none, and its exit pays the one test of the flags.
[[gnu::noinline, gnu::cold]] void run_exit_work(uint8_t work, CUpti_CallbackDomain domain,
                                                CUpti_CallbackId cbid,
                                                const CUpti_CallbackData* cb) {
  // Hardware counters (range_profiler.h): close the range this launch opened.
  if (work & hot::kExitCounterRange) {
    if (RangeProfiler* rp = g_range_profiler.load(std::memory_order_acquire)) rp->on_exit();
  }
  if (work & hot::kExitInstr) instr_launch_exit(domain, cbid, cb);
  if (work & hot::kExitHostCall) host_call_exit(domain, cbid, cb);
}

// A graph launch after an instrumented launch was captured into a graph: its exit copies the
// captured launches' records (graph_capture.cpp). Cold: no graph was captured in most runs.
[[gnu::noinline, gnu::cold]] void watch_graph_launch(hot::Thread& t, CUpti_CallbackDomain domain,
                                                     CUpti_CallbackId cbid,
                                                     const CUpti_CallbackData* cb) {
  uint64_t exec = 0;
  uint64_t stream = 0;
  if (graph_launch_target(domain, cbid, cb->functionParams, exec, stream))
    t.exit_work |= hot::kExitInstr;
}

// API enter of a call that is no plain launch (fan-out 0): a host call (host_calls.h), timed and
// never tagged, or a graph launch, whose fan-out the graph callbacks know.
[[gnu::noinline]] uint32_t unusual_enter(hot::Thread& t, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (instr::InstrRuntime::graphs_captured()) [[unlikely]]
    watch_graph_launch(t, domain, cbid, cb);
  if (host_call_enter(t, domain, cbid)) return kNoKernels;
  return graph_launch_fanout(domain, cbid, cb->functionParams);
}

// One launch API enter or exit. Inlined into both entry points: the subscriber callback must
// not pay a call per launch (each call is a line of code to fetch back into a cold cache).
[[gnu::always_inline]] inline void launch_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                              const CUpti_CallbackData* cb) {
  hot::Thread& t = hot::this_thread();
  if (cb->callbackSite == CUPTI_API_EXIT) {
    // No epoch check here (it would cost the globals' line): an exit can only lower a stale
    // depth, and the next enter or launch_in_progress() sees the stale epoch and discards it.
    if (t.nest_depth > 0 && --t.nest_depth == 0) {
      t.nest_correlation = 0;
      // Hardware counters, instrumentation, host calls: the flags are on the thread's line,
      // already read; one test for all of them.
      if (uint8_t work = t.exit_work) [[unlikely]] {
        t.exit_work = 0;
        run_exit_work(work, domain, cbid, cb);
      }
    }
    return;
  }
  uint32_t epoch = hot::globals.callback_epoch.load(std::memory_order_relaxed);
  if (t.nest_epoch != epoch) [[unlikely]] {
    t.nest_epoch = epoch;
    t.nest_depth = 0;
    t.nest_correlation = 0;
  }
  if (t.nest_depth++ != 0) return;  // nested inside a launch already tagged on this thread
  // No kernel records (instrumentation sessions that asked for none): nothing to tag. The flag
  // is on the globals' line the epoch check just read.
  if (hot::globals.kernel_records_off.load(std::memory_order_relaxed)) [[unlikely]] {
    // A plain launch reads nothing more: fanout_of() is a switch on the callback id.
    if (fanout_of(domain, cbid) == 0 && instr::InstrRuntime::graphs_captured()) [[unlikely]]
      watch_graph_launch(t, domain, cbid, cb);
    return;
  }
  uint32_t fanout = fanout_of(domain, cbid);
  if (fanout == 0) [[unlikely]] {
    fanout = unusual_enter(t, domain, cbid, cb);
    if (fanout == kNoKernels) return;  // a host call, or a graph without kernels: no tag
  }
  // Remembered for graph resource callbacks issued inside this launch (stream capture). The
  // op is read before tag() takes it.
  t.nest_correlation = cb->correlationId;
  t.nest_op = t.pending_op;
  try {
    LaunchStage::tag(t, cb->correlationId, fanout);
  } catch (...) {
    // Only the first tag of a thread allocates; never let it unwind through CUPTI.
    g_errors.fetch_add(1, std::memory_order_relaxed);
  }
  // Hardware counters (range_profiler.h): open a range around this launch. The hook sits on
  // the globals' line, which the epoch check above already read.
  if (void* hook = hot::globals.counter_hook.load(std::memory_order_relaxed)) [[unlikely]] {
    static_cast<RangeProfiler*>(hook)->on_enter(cb->context, cb->correlationId);
    t.exit_work |= hot::kExitCounterRange;
  }
}

}  // namespace

std::span<const LaunchCallback> launch_callbacks() {
  return kCallbacks;
}

uint32_t launch_fanout(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return fanout_of(domain, cbid);
}

void CUPTIAPI on_launch_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    on_graph_resource(cbid, static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  launch_api(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
}

void CUPTIAPI on_cupti_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void* data) {
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API) [[likely]] {
    launch_api(domain, cbid, static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    pc_sampling_resource(cbid, static_cast<const CUpti_ResourceData*>(data));  // contexts, modules
    on_graph_resource(cbid, static_cast<const CUpti_ResourceData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
    on_nvtx(cbid, data);
  }
}

bool launch_in_progress(uint64_t& correlation, uint32_t& op) noexcept {
  // While paused, launch callbacks are off and an exit may have been missed: nothing is known.
  const hot::Thread& t = hot::this_thread();
  if (t.nest_epoch != hot::globals.callback_epoch.load(std::memory_order_relaxed) ||
      t.nest_depth == 0 || t.nest_correlation == 0 ||
      LaunchStage::active_sessions.load(std::memory_order_relaxed) == 0) {
    return false;
  }
  correlation = t.nest_correlation;
  op = t.nest_op;
  return true;
}

void reset_launch_nesting() {
  hot::globals.callback_epoch.fetch_add(1, std::memory_order_relaxed);
}

int set_launch_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                         std::string& error, bool driver_only) {
  int done = 0;
  for (const LaunchCallback& c : kCallbacks) {
    // Runtime graph launches stay on: rare, and their kernels' id is then certain either way.
    if (driver_only && c.domain != kDriver && !c.graph) continue;
    done += set_callback(api, subscriber, enable, c.domain, c.cbid, error) ? 1 : 0;
  }
  return done;
}

bool driver_launch_callbacks_only(const CuptiApi& api, BackendOptions::LaunchCallbacks choice) {
  using Choice = BackendOptions::LaunchCallbacks;
  if (choice != Choice::kAuto) return choice == Choice::kDriver;
  uint32_t version = 0;
  return api.cuptiGetVersion(&version) == CUPTI_SUCCESS && version >= 130000;
}

uint64_t launch_callback_errors() {
  return g_errors.load(std::memory_order_relaxed);
}

}  // namespace proton::cupti
