// CUDA graphs in the CUPTI backend: the resource callbacks that tell the GraphRegistry where
// each kernel node was captured and how many kernels an executable graph launches, the fan-out
// a graph launch is tagged with, and the graph-level mode.
//
// CUPTI facts this relies on (docs and Triton's Proton, which depends on the same):
//   - GRAPHNODE_CREATED is issued on the thread that creates the node, between the enter and
//     exit callbacks of the API that created it: for stream capture, inside the captured
//     kernel launch, so the thread's context then is the capture site, and the launch being
//     tagged on that thread is a captured one that will never run.
//   - Instantiating or cloning a graph reports each copied node as CREATED, then CLONED with
//     the original node: the copy inherits the original's capture site.
//   - Node ids (cuptiGetGraphNodeId) are unique for the process and are what kernel records
//     carry in graphNodeId.
//   - GRAPHEXEC_CREATED carries the source graph and the new executable graph; the handle in
//     cudaGraphLaunch/cuGraphLaunch parameters is that executable graph.
// Resource callbacks are not on the per-launch path: they may lock and allocate, but never
// throw through CUPTI.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <limits>
#include <string>

#include "backends/cupti/cupti_api.h"

namespace proton::cupti {

/// graph_launch_fanout(): the graph launches no kernel, so the launch needs no tag.
inline constexpr uint32_t kNoKernels = std::numeric_limits<uint32_t>::max();

/// The CUPTI id getters the callbacks use (from CuptiApi; tests pass fakes). Set before the
/// graph callbacks are enabled; a null getter makes the matching events count as unknown.
struct GraphIdApi {
  decltype(&::cuptiGetGraphId) graph_id = nullptr;
  decltype(&::cuptiGetGraphNodeId) node_id = nullptr;
  decltype(&::cuptiGetGraphExecId) exec_id = nullptr;
};
void set_graph_id_api(const GraphIdApi& api);

/// Handles CUPTI_CB_DOMAIN_RESOURCE graph events (called from the subscriber callback).
void on_graph_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept;

/// Enables or disables the graph resource callbacks (and, while graph-level mode is pending,
/// the graph-creating API callbacks); returns how many took effect.
int set_graph_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                        std::string& error);

/// Hot path of a graph launch (cudaGraphLaunch / cuGraphLaunch and _ptsz): the kernels this
/// launch of `params`' executable graph produces, 0 when unknown, kNoKernels when none. One
/// lock-free table probe.
uint32_t graph_launch_fanout(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* params) noexcept;

/// Whether (domain, cbid) is a graph launch, with its executable graph and stream (the
/// per-thread stream's handle for a _ptsz launch on stream 0).
bool graph_launch_target(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params,
                         uint64_t& exec, uint64_t& stream) noexcept;

/// Graph-level mode (mode="graph"): one CUPTI_ACTIVITY_KIND_GRAPH_TRACE record per graph
/// launch instead of one kernel record per node, so every graph launch has fan-out 1.
///
/// CUPTI's graph-level trace crashes inside cuGraphLaunch on an executable graph instantiated
/// before the trace was enabled (seen with CUDA 13 / driver 580 on H100 and H200, with no
/// profiler code involved: a bare CUPTI client enabling GRAPH_TRACE does the same). Graphs
/// from before proton.start() cannot be told apart in advance, so the trace is enabled lazily
/// (docs/graphs.md, "Graph-level mode"):
///   - kPending: mode="graph" chosen, GRAPH_TRACE not enabled yet. The first graph-creating
///     API after start (stream capture, cuGraphCreate, instantiation; is_graph_creation())
///     enables it at its enter callback, before the driver creates anything: kOn.
///   - A graph launch while kPending names a graph this session did not create (instantiated
///     before start): graph-level mode is given up before GRAPH_TRACE was ever enabled, so the
///     run is exactly the default mode from CUPTI's side as well as ours: kLeft.
///   - A graph launch while kOn that names an executable graph the exec table does not know:
///     GRAPH_TRACE is disabled before the driver goes on (the only case that enables and then
///     disables the trace): kLeft.
/// Leaving prints a one-line notice; from then on graph launches fan out to per-node kernel
/// records as in the default mode.
/// `enable_trace` null: the caller already enabled GRAPH_TRACE (eager: kOn at once).
using ActivityKindFn = CUptiResult(CUPTIAPI*)(CUpti_ActivityKind);
using DisableActivityFn = ActivityKindFn;
enum class GraphLevel : uint8_t { kOff, kPending, kOn, kLeft };
void set_graph_level(bool on, ActivityKindFn disable_trace = nullptr,
                     ActivityKindFn enable_trace = nullptr);
/// GRAPH_TRACE is on and its records stand for graph launches (kOn).
bool graph_level() noexcept;
GraphLevel graph_level_state() noexcept;
/// Graph launches that made graph-level mode fall back (0 or 1 per backend start).
uint64_t graph_level_fallbacks();
/// Times GRAPH_TRACE was enabled lazily (0 or 1 per backend start; 0 when the first graph
/// launch named a graph from before start).
uint64_t graph_trace_enables();

/// Runtime/driver API callbacks that create graphs or executable graphs (stream capture,
/// cuGraphCreate, cuGraphClone, instantiation): enabled by set_graph_callbacks only while
/// graph-level mode is pending, and routed here by the launch callback (launch_fanout() gives
/// them 0, graph_launch_fanout() answers kNoKernels: they are not launches).
bool is_graph_creation(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept;

/// Graph callbacks that failed (allocation): counted, not propagated through CUPTI.
uint64_t graph_callback_errors();

}  // namespace proton::cupti
