#include "backends/cupti/graph_callbacks.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "attribution/graph_exec_table.h"
#include "attribution/graph_registry.h"
#include "attribution/launch_stage.h"
#include "backends/cupti/launch_callbacks.h"
#include "backends/instrumentation/instr_runtime.h"

namespace proton::cupti {

namespace {

constexpr std::array kGraphCallbacks = {
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,          CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
    CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING, CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING,
    CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,          CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING,
};

// The APIs that create graphs or executable graphs. Graph-level mode enables GRAPH_TRACE at
// the enter callback of the first of them after start (graph_callbacks.h): every graph made
// while profiling then exists only with the trace on, as when it was enabled at start.
struct GraphApi {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
};
constexpr std::array kGraphCreationApis = {
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphCreate},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphClone},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams},
    GraphApi{CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz},
    // The runtime's too: where only driver launch callbacks run, a runtime call still enters
    // its driver twin, but nothing is lost by hearing it first.
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000},
    GraphApi{CUPTI_CB_DOMAIN_RUNTIME_API,
             CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000},
};

// Written by set_graph_id_api before the callbacks are enabled; read in callbacks.
std::atomic<decltype(&::cuptiGetGraphId)> g_graph_id{nullptr};
std::atomic<decltype(&::cuptiGetGraphNodeId)> g_node_id{nullptr};
std::atomic<decltype(&::cuptiGetGraphExecId)> g_exec_id{nullptr};
// Graph-level state (graph_callbacks.h). Read relaxed on every graph launch and record; its
// transitions are rare (at most two per backend start) and serialised by g_transition_mu.
std::atomic<GraphLevel> g_state{GraphLevel::kOff};
std::mutex g_transition_mu;
std::atomic<ActivityKindFn> g_disable_graph_trace{nullptr};  // set with g_state
std::atomic<ActivityKindFn> g_enable_graph_trace{nullptr};
std::atomic<uint64_t> g_graph_level_fallbacks{0};
std::atomic<uint64_t> g_graph_trace_enables{0};
std::atomic<uint64_t> g_graph_errors{0};

void print_fallback_notice() {
  std::fprintf(stderr,
               "proton: mode='graph' met a CUDA graph instantiated before profiling started, "
               "which CUPTI's graph-level trace cannot launch safely; this run goes on with "
               "per-kernel records (start profiling before instantiating graphs to keep "
               "graph-level records)\n");
}

// A graph launch in graph-level mode names a graph from before start (see set_graph_level).
// Runs on the launching thread inside the launch's enter callback, before the driver goes on.
// The new state is published only once the trace is off: until then, other threads launching
// an old graph see kOn, come here and wait on the lock instead of launching it under the trace.
void leave_graph_level() noexcept {
  std::lock_guard lock(g_transition_mu);
  GraphLevel state = g_state.load(std::memory_order_relaxed);
  if (state != GraphLevel::kPending && state != GraphLevel::kOn) return;  // another thread left
  ActivityKindFn disable = g_disable_graph_trace.load(std::memory_order_relaxed);
  // Pending: GRAPH_TRACE was never enabled, nothing to undo (the default mode, exactly).
  if (state == GraphLevel::kOn && disable != nullptr) disable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  g_state.store(GraphLevel::kLeft, std::memory_order_relaxed);
  g_graph_level_fallbacks.fetch_add(1, std::memory_order_relaxed);
  print_fallback_notice();
}

// The first graph-creating API after start, at its enter callback: enable GRAPH_TRACE before
// the driver creates the graph. A refusal gives up graph-level mode (per-kernel records).
// kOn is published after the enable: another thread's creation or old-graph launch meanwhile
// still sees kPending and waits on the lock. (Two threads can wait here only at the one
// transition; the old code took no lock but had the same CUPTI call inside the callback.)
void graph_creation_entered() noexcept {
  if (g_state.load(std::memory_order_relaxed) != GraphLevel::kPending) return;
  std::lock_guard lock(g_transition_mu);
  if (g_state.load(std::memory_order_relaxed) != GraphLevel::kPending) return;
  ActivityKindFn enable = g_enable_graph_trace.load(std::memory_order_relaxed);
  CUptiResult r = enable != nullptr ? enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE) : CUPTI_SUCCESS;
  if (r == CUPTI_SUCCESS) {
    g_graph_trace_enables.fetch_add(1, std::memory_order_relaxed);
    g_state.store(GraphLevel::kOn, std::memory_order_relaxed);
    return;
  }
  g_state.store(GraphLevel::kLeft, std::memory_order_relaxed);
  g_graph_level_fallbacks.fetch_add(1, std::memory_order_relaxed);
  std::fprintf(stderr,
               "proton: mode='graph': CUPTI refused the graph-level trace (error %d); this run "
               "goes on with per-kernel records\n",
               static_cast<int>(r));
}

// The executable-graph table stores the fan-out as is, 0 for "unknown", and this for "no
// kernels" (GraphExecTable::kUnknown, one above, means "never seen").
constexpr uint32_t kZeroKernels = GraphExecTable::kUnknown - 1;

uint32_t graph_id(CUgraph graph) {
  auto fn = g_graph_id.load(std::memory_order_relaxed);
  uint32_t id = 0;
  if (graph == nullptr || fn == nullptr || fn(graph, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

uint64_t node_id(CUgraphNode node) {
  auto fn = g_node_id.load(std::memory_order_relaxed);
  uint64_t id = 0;
  if (node == nullptr || fn == nullptr || fn(node, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

uint32_t exec_id(CUgraphExec exec) {
  auto fn = g_exec_id.load(std::memory_order_relaxed);
  uint32_t id = 0;
  if (exec == nullptr || fn == nullptr || fn(exec, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

GraphNodeKind kind_of(CUgraphNodeType type) {
  switch (type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return GraphNodeKind::kKernel;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_HOST:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return GraphNodeKind::kNoKernel;
    default:
      // Child graphs, conditional (if/while/switch) nodes, and types newer than this code:
      // their kernels per launch are not a fixed count.
      return GraphNodeKind::kUncertain;
  }
}

void node_created(const CUpti_GraphData& g) {
  uint64_t node = node_id(g.node);
  if (node == 0) return;
  CaptureSite site;
  site.context = ThreadContext::launch_context();
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_relaxed);
  if ((active & LaunchStage::python_sessions.load(std::memory_order_relaxed)) != 0) {
    site.python_context = LaunchStage::python_context();
  }
  uint64_t correlation = 0;
  bool captured = launch_in_progress(correlation, site.op);
  if (!captured) site.op = 0;
  GraphRegistry& registry = GraphRegistry::global();
  registry.node_created(node, graph_id(g.graph), kind_of(g.nodeType), &site);
  // Created inside a kernel (or graph) launch on this thread: that launch was captured into a
  // graph, not run. Explicitly added nodes (cudaGraphAddKernelNode) are created outside any
  // launch and keep their thread's context as their site.
  if (captured) registry.captured_launch(correlation);
}

void exec_created(const CUpti_GraphData& g) {
  if (g.graphExec == nullptr) return;
  uint32_t fanout = GraphRegistry::global().exec_created(exec_id(g.graphExec), graph_id(g.graph));
  uint32_t stored = fanout == GraphRegistry::kUnknownFanout ? 0
                    : fanout == 0                           ? kZeroKernels
                                                            : fanout;
  GraphExecTable::global().set(reinterpret_cast<uintptr_t>(g.graphExec), stored);
  // Instrumented launches captured into the graph: their replays are copied back per launch.
  if (instr::InstrRuntime::graphs_captured())
    instr::InstrRuntime::get().graph_instantiated(reinterpret_cast<uint64_t>(g.graph),
                                                  reinterpret_cast<uint64_t>(g.graphExec));
}

}  // namespace

void set_graph_id_api(const GraphIdApi& api) {
  g_graph_id.store(api.graph_id, std::memory_order_relaxed);
  g_node_id.store(api.node_id, std::memory_order_relaxed);
  g_exec_id.store(api.exec_id, std::memory_order_release);
}

void on_graph_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept {
  if (data == nullptr || data->resourceDescriptor == nullptr) return;
  const auto& g = *static_cast<const CUpti_GraphData*>(data->resourceDescriptor);
  GraphRegistry& registry = GraphRegistry::global();
  try {
    switch (cbid) {
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED:
        node_created(g);
        break;
      case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED:
        registry.node_cloned(node_id(g.node), graph_id(g.graph), node_id(g.originalNode),
                             kind_of(g.nodeType));
        break;
      case CUPTI_CBID_RESOURCE_GRAPHNODE_DESTROY_STARTING:
        registry.node_destroyed(node_id(g.node), graph_id(g.graph), kind_of(g.nodeType));
        break;
      case CUPTI_CBID_RESOURCE_GRAPH_DESTROY_STARTING:
        registry.graph_destroyed(graph_id(g.graph));
        if (instr::InstrRuntime::graphs_captured())
          instr::InstrRuntime::get().graph_destroyed(reinterpret_cast<uint64_t>(g.graph));
        break;
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED:
        exec_created(g);
        break;
      case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING:
        // Its handle may be reused by the next instantiation; its nodes' sites stay until
        // their own destroy events (records of its last launch may still be in flight).
        GraphExecTable::global().erase(reinterpret_cast<uintptr_t>(g.graphExec));
        if (instr::InstrRuntime::graphs_captured())
          instr::InstrRuntime::get().graph_exec_destroyed(reinterpret_cast<uint64_t>(g.graphExec));
        break;
      default:
        break;
    }
  } catch (...) {
    g_graph_errors.fetch_add(1,
                             std::memory_order_relaxed);  // out of memory: that node goes unknown
  }
}

int set_graph_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                        std::string& error) {
  int done = 0;
  for (CUpti_CallbackIdResource cbid : kGraphCallbacks) {
    CUptiResult r =
        api.cuptiEnableCallback(enable ? 1u : 0u, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (r == CUPTI_SUCCESS) {
      ++done;
    } else if (error.empty()) {
      error = cupti_error(api, "cuptiEnableCallback(graph resource)", r);
    }
  }
  // Graph-creating APIs: only graph-level mode waiting for its first graph listens to them
  // (the default mode never does). Turning them off is harmless where they were never on.
  if (enable && g_state.load(std::memory_order_relaxed) != GraphLevel::kPending) return done;
  for (const GraphApi& a : kGraphCreationApis) {
    CUptiResult r = api.cuptiEnableCallback(enable ? 1u : 0u, subscriber, a.domain, a.cbid);
    if (r == CUPTI_SUCCESS) {
      ++done;
    } else if (enable && error.empty() && r != CUPTI_ERROR_INVALID_PARAMETER) {
      // INVALID_PARAMETER: an id this libcupti predates (cuStreamBeginCaptureToGraph, 12.3).
      error = cupti_error(api, "cuptiEnableCallback(graph creation)", r);
    }
  }
  return done;
}

bool is_graph_creation(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) noexcept {
  for (const GraphApi& a : kGraphCreationApis) {
    if (a.cbid == cbid && a.domain == domain) return true;
  }
  return false;
}

namespace {

// The four graph-launch entry points' parameters are the same two handles in the same order
// (the executable graph, then the stream): read through one layout.
struct GraphLaunchParams {
  const void* exec;
  const void* stream;
};
constexpr size_t kTwoHandles = sizeof(GraphLaunchParams);
static_assert(sizeof(cudaGraphLaunch_v10000_params) == kTwoHandles &&
              sizeof(cudaGraphLaunch_ptsz_v10000_params) == kTwoHandles &&
              sizeof(cuGraphLaunch_params) == kTwoHandles &&
              sizeof(cuGraphLaunch_ptsz_params) == kTwoHandles);
static_assert(offsetof(cudaGraphLaunch_v10000_params, graphExec) == 0 &&
              offsetof(cudaGraphLaunch_ptsz_v10000_params, graphExec) == 0 &&
              offsetof(cuGraphLaunch_params, hGraph) == 0 &&
              offsetof(cuGraphLaunch_ptsz_params, hGraphExec) == 0);

}  // namespace

bool graph_launch_target(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params,
                         uint64_t& exec, uint64_t& stream) noexcept {
  bool per_thread = false;  // a _ptsz entry point: stream 0 is the thread's default stream
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    per_thread = cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
    if (!per_thread && cbid != CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) return false;
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    per_thread = cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
    if (!per_thread && cbid != CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch) return false;
  } else {
    return false;
  }
  GraphLaunchParams p{nullptr, nullptr};
  if (params != nullptr) std::memcpy(&p, params, sizeof p);
  exec = reinterpret_cast<uint64_t>(p.exec);
  stream = reinterpret_cast<uint64_t>(p.stream);
  if (per_thread && stream == 0) stream = reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD);
  return true;
}

uint32_t graph_launch_fanout(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* params) noexcept {
  uint64_t exec_handle = 0;
  uint64_t stream = 0;
  const bool graph_launch = graph_launch_target(domain, cbid, params, exec_handle, stream);
  const void* exec = reinterpret_cast<const void*>(exec_handle);
  // Not a graph launch: a graph-creating API (not a launch: no tag), or a multi-device
  // cooperative launch (one kernel per device, count unknown).
  if (!graph_launch && is_graph_creation(domain, cbid)) {
    graph_creation_entered();
    return kNoKernels;
  }
  GraphLevel state = g_state.load(std::memory_order_relaxed);
  uint32_t stored = exec == nullptr
                        ? GraphExecTable::kUnknown
                        : GraphExecTable::global().find(reinterpret_cast<uintptr_t>(exec));
  if (state == GraphLevel::kOn) {
    if (stored != GraphExecTable::kUnknown || exec == nullptr) return 1;  // one graph record
    leave_graph_level();  // before the driver launches a graph CUPTI's trace would crash on
  } else if (state == GraphLevel::kPending && exec != nullptr) {
    // No graph was made since start, yet one is launched: it is from before start (or its
    // creation went unheard). GRAPH_TRACE is still off: stay the default mode for good.
    leave_graph_level();
  }
  if (stored == GraphExecTable::kUnknown) return 0;  // instantiated before profiling started
  return stored == kZeroKernels ? kNoKernels : stored;
}

void set_graph_level(bool on, ActivityKindFn disable_trace, ActivityKindFn enable_trace) {
  std::lock_guard lock(g_transition_mu);
  g_disable_graph_trace.store(on ? disable_trace : nullptr, std::memory_order_relaxed);
  g_enable_graph_trace.store(on ? enable_trace : nullptr, std::memory_order_relaxed);
  GraphLevel state = !on                       ? GraphLevel::kOff
                     : enable_trace != nullptr ? GraphLevel::kPending
                                               : GraphLevel::kOn;
  g_state.store(state, std::memory_order_relaxed);
}

uint64_t graph_level_fallbacks() {
  return g_graph_level_fallbacks.load(std::memory_order_relaxed);
}

uint64_t graph_trace_enables() {
  return g_graph_trace_enables.load(std::memory_order_relaxed);
}

bool graph_level() noexcept {
  return g_state.load(std::memory_order_relaxed) == GraphLevel::kOn;
}

GraphLevel graph_level_state() noexcept {
  return g_state.load(std::memory_order_relaxed);
}

uint64_t graph_callback_errors() {
  return g_graph_errors.load(std::memory_order_relaxed);
}

}  // namespace proton::cupti
