// The launch callbacks: the hot path of the CUPTI backend.
//
// Only kernel-launching APIs are subscribed, in two domains:
//   runtime: cudaLaunchKernel(+ExC, cooperative, legacy cudaLaunch), CUDA 13's
//            __cudaLaunchKernel (what <<<>>> stubs call), cudaGraphLaunch; _ptsz variants;
//   driver:  cuLaunchKernel(+Ex, cooperative, multi-device, legacy cuLaunch*), cuGraphLaunch;
//            _ptsz variants. Triton launches through the driver; PyTorch through the runtime.
// A kernel record carries the correlation id of the API call that launched it, and for a
// runtime launch that is the runtime call. A runtime launch also enters the driver's launch
// callback, nested, and since CUDA 13 under the same correlation id: there the driver ids
// alone see every launch, at half the callbacks (the default; tests/gpu checks the premise).
// With both domains on, only the outermost call on the thread is tagged: tagging the inner
// one too would leave a tag no kernel ever claims.
//
// Host calls (synchronizes, copies: host_calls.h) share the subscriber and the nesting: their
// ids answer a fan-out of 0, so a plain launch never tests for them, and they are timed from
// the rare branch that graph launches take.
//
// Per call: the thread's hot::Thread (one line, found through the thread pointer), the
// hot::Globals line, LaunchStage::tag() storing into the thread's queue. Nothing else: in a
// real launch every line touched comes back from L2 or L3 (common/hot.h).
#pragma once

#include <cupti.h>

#include <span>
#include <string>

#include "backends/backend.h"
#include "backends/cupti/cupti_api.h"

namespace proton::cupti {

struct LaunchCallback {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  bool graph;  // one launch, many kernels: fan-out from graph_launch_fanout()
};

/// Every callback the backend enables.
std::span<const LaunchCallback> launch_callbacks();

/// Fan-out a launch through (domain, cbid) is tagged with: 1, or 0 for graph launches (and
/// for the graph-creating APIs mode="graph" listens to, which graph_launch_fanout() answers).
uint32_t launch_fanout(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/// The subscriber callback (passed to cuptiSubscribe): launch APIs, graph resources (see
/// graph_callbacks.h) and NVTX ranges (nvtx_callbacks.h). Never throws, never locks.
void CUPTIAPI on_cupti_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                const void* data);

/// on_cupti_callback for launch APIs and graph resources only (tests).
void CUPTIAPI on_launch_api(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                            const void* data);

/// True while the calling thread is inside a tagged launch API call (between its enter and exit
/// callbacks): `correlation` and the launch-metadata `op` of that launch. Graph resource
/// callbacks use it to recognise a launch that stream capture turned into a graph node.
bool launch_in_progress(uint64_t& correlation, uint32_t& op) noexcept;

/// Forgets any launch left half-seen on any thread (its exit callback was disabled by a
/// pause). Call before enabling the callbacks again.
void reset_launch_nesting();

/// Enables or disables the launch callbacks: all of them, or with `driver_only` those of the
/// driver domain and the runtime's graph launches (enough where runtime launches enter them with
/// the runtime call's correlation id: see BackendOptions::launch_callbacks). CUPTI enables
/// callbacks one id at a time; ids an older libcupti does not know are skipped. Returns how many
/// ids took effect; `error` gets the first failure.
int set_launch_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                         std::string& error, bool driver_only = false);

/// Whether `options` means driver-only launch callbacks with this libcupti.
bool driver_launch_callbacks_only(const CuptiApi& api, BackendOptions::LaunchCallbacks choice);

/// Callbacks that threw (a failed allocation of a thread's first tag block): counted, not
/// propagated through CUPTI.
uint64_t launch_callback_errors();

}  // namespace proton::cupti
