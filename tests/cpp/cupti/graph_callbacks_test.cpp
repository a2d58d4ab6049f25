// The graph resource callbacks and graph-launch fan-out, driven through the real subscriber
// callback with hand-built CUpti_ResourceData / CUpti_GraphData and fake CUPTI id getters (a
// handle's id is its address, so tests pick ids by picking handles).
#include "backends/cupti/graph_callbacks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "attribution/graph_exec_table.h"
#include "attribution/graph_registry.h"
#include "attribution/launch_stage.h"
#include "backends/cupti/graph_records.h"
#include "backends/cupti/launch_callbacks.h"
#include "context/launch_ops.h"
#include "test_util.h"

namespace proton::cupti {
namespace {

CUptiResult fake_graph_id(CUgraph graph, uint32_t* id) {
  *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(graph));
  return CUPTI_SUCCESS;
}
CUptiResult fake_node_id(CUgraphNode node, uint64_t* id) {
  *id = reinterpret_cast<uintptr_t>(node);
  return CUPTI_SUCCESS;
}
CUptiResult fake_exec_id(CUgraphExec exec, uint32_t* id) {
  *id = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(exec));
  return CUPTI_SUCCESS;
}

template <typename T>
T handle(uintptr_t id) {
  return reinterpret_cast<T>(id);
}

using proton::testing::drain_tags;

void resource(CUpti_CallbackId cbid, CUpti_GraphData g) {
  CUpti_ResourceData data{};
  data.resourceDescriptor = &g;
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_RESOURCE, cbid, &data);
}

CUpti_GraphData node(uintptr_t node, uintptr_t graph,
                     CUgraphNodeType type = CU_GRAPH_NODE_TYPE_KERNEL) {
  CUpti_GraphData g{};
  g.node = handle<CUgraphNode>(node);
  g.graph = handle<CUgraph>(graph);
  g.nodeType = type;
  return g;
}

void api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
         uint32_t correlation, const void* params = nullptr) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = correlation;
  data.functionParams = params;
  on_launch_api(nullptr, domain, cbid, &data);
}

class GraphCallbacks : public ::testing::Test {
 protected:
  void SetUp() override {
    set_graph_id_api({fake_graph_id, fake_node_id, fake_exec_id});
    set_graph_level(false);
    reset_launch_nesting();
    drain_tags();
    std::vector<uint64_t> stale;
    GraphRegistry::global().take_captured(stale);
    LaunchStage::active_sessions = 1;
  }
  void TearDown() override {
    LaunchStage::active_sessions = 0;
    set_graph_level(false);
  }

  // A kernel launch captured into `graph` as `node`, in the current scope.
  void captured_launch(uint32_t correlation, uintptr_t node_handle, uintptr_t graph) {
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER,
        correlation);
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(node_handle, graph));
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT,
        correlation);
  }

  uint32_t launch_fanout_of(uintptr_t exec, uint32_t correlation) {
    cuGraphLaunch_params p{handle<CUgraphExec>(exec), nullptr};
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_ENTER,
        correlation, &p);
    api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_EXIT,
        correlation, &p);
    auto tags = drain_tags();
    if (tags.empty()) return kNoKernels;
    EXPECT_EQ(tags.size(), 1u);
    return tags.back().fanout;
  }

  proton::testing::MainThreadFixture main_;
};

TEST_F(GraphCallbacks, CaptureRecordsTheSiteAndMarksTheLaunchCaptured) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(proton::testing::id("attention"));
  captured_launch(21, 0x10010, 0x100);
  tc.exit_scope(proton::testing::id("attention"));
  CaptureSite site;
  ASSERT_TRUE(GraphRegistry::global().site(0x10010, site));
  EXPECT_EQ(proton::testing::path_of(site.context), "attention");
  std::vector<uint64_t> captured;
  GraphRegistry::global().take_captured(captured);
  EXPECT_EQ(captured, std::vector<uint64_t>{21});
  EXPECT_EQ(drain_tags().size(), 1u);  // the capture-time tag was staged (the processor drops it)
}

TEST_F(GraphCallbacks, TheCapturedLaunchsMetadataStaysWithTheNode) {
  uint32_t op = LaunchOps::global().intern(proton::testing::id("add_kernel[128]"), {});
  LaunchOps::set_pending(op);  // what hook="triton" does right before the launch
  captured_launch(25, 0x10030, 0x102);
  CaptureSite site;
  ASSERT_TRUE(GraphRegistry::global().site(0x10030, site));
  EXPECT_EQ(site.op, op);
  EXPECT_EQ(LaunchOps::take_pending(), 0u);  // the capture-time tag took it, as for any launch
}

TEST_F(GraphCallbacks, ExplicitlyAddedNodesAreNotCapturedLaunches) {
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x10020, 0x101));
  std::vector<uint64_t> captured;
  GraphRegistry::global().take_captured(captured);
  EXPECT_TRUE(captured.empty());
  CaptureSite site;
  EXPECT_TRUE(GraphRegistry::global().site(0x10020, site));
}

TEST_F(GraphCallbacks, InstantiatedGraphLaunchesWithItsKernelCount) {
  for (uint32_t i = 0; i < 3; ++i)
    captured_launch(30 + i, 0x20000 + 0x10 * i, 0x200);
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x20000, 0x200, CU_GRAPH_NODE_TYPE_MEMSET));
  drain_tags();
  // cudaGraphInstantiate: copies (CREATED + CLONED), then GRAPHEXEC_CREATED.
  for (uint32_t i = 0; i < 3; ++i) {
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x21000 + 0x10 * i, 0x210));
    CUpti_GraphData clone = node(0x21000 + 0x10 * i, 0x210);
    clone.originalNode = handle<CUgraphNode>(0x20000 + 0x10 * i);
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, clone);
  }
  CUpti_GraphData exec{};
  exec.graph = handle<CUgraph>(0x200);
  exec.graphExec = handle<CUgraphExec>(0x210);
  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, exec);
  EXPECT_EQ(launch_fanout_of(0x210, 40), 3u);

  // Runtime launches read the same table through their own parameter struct.
  cudaGraphLaunch_v10000_params rp{handle<cudaGraphExec_t>(0x210), nullptr};
  EXPECT_EQ(graph_launch_fanout(CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &rp),
            3u);

  // Graph-level mode: one graph record per launch whatever the nodes.
  set_graph_level(true);
  EXPECT_EQ(launch_fanout_of(0x210, 41), 1u);
  set_graph_level(false);

  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, exec);
  EXPECT_EQ(launch_fanout_of(0x210, 42), 0u);  // gone: unknown again
}

TEST_F(GraphCallbacks, GraphsFromBeforeStartAndEmptyGraphs) {
  EXPECT_EQ(launch_fanout_of(0x999, 50), 0u);  // never seen: tagged, fan-out unknown
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x30000, 0x300, CU_GRAPH_NODE_TYPE_MEMCPY));
  CUpti_GraphData exec{};
  exec.graph = handle<CUgraph>(0x300);
  exec.graphExec = handle<CUgraphExec>(0x310);
  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, exec);
  EXPECT_EQ(launch_fanout_of(0x310, 51), kNoKernels);  // no kernels: no tag at all
}

std::vector<CUpti_ActivityKind> g_disabled;  // kinds passed to fake_disable
CUptiResult CUPTIAPI fake_disable(CUpti_ActivityKind kind) {
  g_disabled.push_back(kind);
  return CUPTI_SUCCESS;
}

TEST_F(GraphCallbacks, GraphLevelModeFallsBackOnAGraphFromBeforeStart) {
  CUpti_GraphData exec{};
  exec.graph = handle<CUgraph>(0x600);
  exec.graphExec = handle<CUgraphExec>(0x610);
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x60000, 0x600));
  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, exec);
  g_disabled.clear();
  uint64_t before = graph_level_fallbacks();
  set_graph_level(true, fake_disable);

  EXPECT_EQ(launch_fanout_of(0x610, 80), 1u);  // known: one graph-level record
  EXPECT_TRUE(g_disabled.empty());
  EXPECT_TRUE(graph_level());

  // Unknown (instantiated before the trace): CUPTI's graph trace would crash on it, so the
  // launch leaves graph-level mode first and fans out per node (count unknown).
  EXPECT_EQ(launch_fanout_of(0x999, 81), 0u);
  EXPECT_FALSE(graph_level());
  ASSERT_EQ(g_disabled.size(), 1u);
  EXPECT_EQ(g_disabled[0], CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  EXPECT_EQ(graph_level_fallbacks(), before + 1);

  // From then on: the default mode's fan-outs, and no second disable.
  EXPECT_EQ(launch_fanout_of(0x999, 82), 0u);
  EXPECT_EQ(launch_fanout_of(0x610, 83), 1u);  // its one kernel node
  EXPECT_EQ(g_disabled.size(), 1u);
  EXPECT_EQ(graph_level_fallbacks(), before + 1);
}

std::vector<CUpti_ActivityKind> g_enabled;  // kinds passed to fake_enable
CUptiResult CUPTIAPI fake_enable(CUpti_ActivityKind kind) {
  g_enabled.push_back(kind);
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI refuse_enable(CUpti_ActivityKind kind) {
  g_enabled.push_back(kind);
  return CUPTI_ERROR_NOT_COMPATIBLE;
}

// The enter and exit of a graph-creating API (stream capture, instantiation) on this thread.
void graph_api(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, uint32_t correlation) {
  api(domain, cbid, CUPTI_API_ENTER, correlation);
  api(domain, cbid, CUPTI_API_EXIT, correlation);
}

// mode="graph" as the backend starts it: GRAPH_TRACE waits for the first graph made.
class LazyGraphTrace : public GraphCallbacks {
 protected:
  void SetUp() override {
    GraphCallbacks::SetUp();
    g_enabled.clear();
    g_disabled.clear();
    fallbacks_ = graph_level_fallbacks();
    enables_ = graph_trace_enables();
    set_graph_level(true, fake_disable, fake_enable);
  }
  // An executable graph made while profiling, with one kernel node.
  void instantiated(uintptr_t graph, uintptr_t exec_handle) {
    resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(graph * 0x100, graph));
    CUpti_GraphData exec{};
    exec.graph = handle<CUgraph>(graph);
    exec.graphExec = handle<CUgraphExec>(exec_handle);
    resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, exec);
  }
  uint64_t fallbacks_ = 0;
  uint64_t enables_ = 0;
};

TEST_F(LazyGraphTrace, AGraphFromBeforeStartLaunchedFirstNeverMeetsTheTrace) {
  EXPECT_EQ(graph_level_state(), GraphLevel::kPending);
  EXPECT_FALSE(graph_level());  // no graph records yet: kernel records are all kept
  // The exact default path: per-node fan-out (unknown), nothing enabled or disabled.
  EXPECT_EQ(launch_fanout_of(0x999, 90), 0u);
  EXPECT_EQ(graph_level_state(), GraphLevel::kLeft);
  EXPECT_TRUE(g_enabled.empty());
  EXPECT_TRUE(g_disabled.empty());
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_ + 1);
  EXPECT_EQ(graph_trace_enables(), enables_);
  // Graphs made later keep per-node records: the trace stays off for the rest of the run.
  graph_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, 91);
  instantiated(0x7, 0x710);
  EXPECT_EQ(launch_fanout_of(0x710, 92), 1u);  // its one kernel node, per node
  EXPECT_TRUE(g_enabled.empty());
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_ + 1);
}

TEST_F(LazyGraphTrace, TheFirstGraphMadeEnablesTheTraceBeforeTheDriverRuns) {
  // Stream capture's enter callback: GRAPH_TRACE goes on before any node exists.
  graph_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2, 100);
  ASSERT_EQ(g_enabled.size(), 1u);
  EXPECT_EQ(g_enabled[0], CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  EXPECT_TRUE(graph_level());
  EXPECT_EQ(graph_trace_enables(), enables_ + 1);
  EXPECT_TRUE(drain_tags().empty());  // not a launch: no tag
  // Later creations change nothing.
  graph_api(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, 101);
  EXPECT_EQ(g_enabled.size(), 1u);
  instantiated(0x8, 0x810);
  EXPECT_EQ(launch_fanout_of(0x810, 102), 1u);  // one graph-level record
  EXPECT_TRUE(graph_level());
  // A graph from before start after that: today's fallback, the trace disabled once.
  EXPECT_EQ(launch_fanout_of(0x999, 103), 0u);
  EXPECT_EQ(graph_level_state(), GraphLevel::kLeft);
  ASSERT_EQ(g_disabled.size(), 1u);
  EXPECT_EQ(g_disabled[0], CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_ + 1);
}

TEST_F(LazyGraphTrace, EveryGraphCreatingApiIsHeardAndNoneIsALaunch) {
  struct Api {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
  };
  const Api apis[] = {
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphCreate},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphClone},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams_ptsz},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000},
      {CUPTI_CB_DOMAIN_RUNTIME_API,
       CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000},
  };
  uint32_t correlation = 110;
  for (const Api& a : apis) {
    SCOPED_TRACE(a.cbid);
    EXPECT_TRUE(is_graph_creation(a.domain, a.cbid));
    EXPECT_EQ(launch_fanout(a.domain, a.cbid), 0u);  // routed to graph_launch_fanout
    set_graph_level(true, fake_disable, fake_enable);
    g_enabled.clear();
    graph_api(a.domain, a.cbid, correlation++);
    EXPECT_EQ(g_enabled.size(), 1u);
    EXPECT_TRUE(graph_level());
    EXPECT_TRUE(drain_tags().empty());
  }
  // Kernel and graph launches are not graph creation.
  EXPECT_FALSE(
      is_graph_creation(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
  EXPECT_FALSE(
      is_graph_creation(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch));
  // Same number, other domain: cudaGraphCreate's id is not a driver graph API.
  EXPECT_FALSE(is_graph_creation(CUPTI_CB_DOMAIN_DRIVER_API,
                                 CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000));
}

// Calls into CUPTI in the order they happened, from any thread.
std::mutex g_log_mu;
std::vector<std::string> g_log;
std::atomic<bool> g_enable_started{false};
void log_call(const char* what) {
  std::lock_guard lock(g_log_mu);
  g_log.emplace_back(what);
}
CUptiResult CUPTIAPI slow_enable(CUpti_ActivityKind) {
  g_enable_started = true;
  log_call("enable begins");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  log_call("enable ends");
  return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI logged_disable(CUpti_ActivityKind) {
  log_call("disable");
  return CUPTI_SUCCESS;
}

TEST_F(LazyGraphTrace, AnOldGraphLaunchedWhileTheTraceIsEnabledWaitsThenDisablesIt) {
  g_log.clear();
  g_enable_started = false;
  set_graph_level(true, logged_disable, slow_enable);
  std::thread creator([] {
    graph_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags, 140);
  });
  while (!g_enable_started)
    std::this_thread::yield();
  // The old graph's launch must not reach the driver with the trace half on: it waits for the
  // enable, then turns the trace off before returning.
  EXPECT_EQ(launch_fanout_of(0x999, 141), 0u);
  log_call("launch returns");
  creator.join();
  EXPECT_EQ(g_log, (std::vector<std::string>{"enable begins", "enable ends", "disable",
                                             "launch returns"}));
  EXPECT_EQ(graph_level_state(), GraphLevel::kLeft);
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_ + 1);
  EXPECT_EQ(graph_trace_enables(), enables_ + 1);
}

TEST_F(LazyGraphTrace, ARefusedTraceLeavesGraphLevelModeWithOneNotice) {
  set_graph_level(true, fake_disable, refuse_enable);
  graph_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphCreate, 120);
  EXPECT_EQ(g_enabled.size(), 1u);
  EXPECT_EQ(graph_level_state(), GraphLevel::kLeft);
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_ + 1);
  EXPECT_EQ(graph_trace_enables(), enables_);
  instantiated(0x9, 0x910);
  EXPECT_EQ(launch_fanout_of(0x910, 121), 1u);  // per node
  EXPECT_TRUE(g_disabled.empty());
}

TEST_F(LazyGraphTrace, TheDefaultModeNeverTouchesTheTrace) {
  set_graph_level(false, fake_disable, fake_enable);
  EXPECT_EQ(graph_level_state(), GraphLevel::kOff);
  // (The backend does not even subscribe these in the default mode; heard anyway, no effect.)
  graph_api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate, 130);
  EXPECT_EQ(launch_fanout_of(0x999, 131), 0u);
  EXPECT_TRUE(g_enabled.empty());
  EXPECT_TRUE(g_disabled.empty());
  EXPECT_EQ(graph_level_fallbacks(), fallbacks_);
}

std::set<std::pair<int, uint32_t>> g_subscribed;  // (domain, cbid) enabled through the fake
CUptiResult CUPTIAPI fake_enable_callback(uint32_t enable, CUpti_SubscriberHandle,
                                          CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (enable) {
    g_subscribed.insert({domain, cbid});
  } else {
    g_subscribed.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

TEST_F(GraphCallbacks, OnlyPendingGraphLevelModeSubscribesTheGraphCreatingApis) {
  CuptiApi api;
  api.cuptiEnableCallback = fake_enable_callback;
  std::string error;
  const std::pair<int, uint32_t> instantiate{CUPTI_CB_DOMAIN_DRIVER_API,
                                             CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags};
  const std::pair<int, uint32_t> node_created{CUPTI_CB_DOMAIN_RESOURCE,
                                              CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED};
  for (auto [on, lazy] : {std::pair{false, false}, std::pair{true, false}}) {
    // Default mode, and mode="graph" with the trace enabled at start: resources only.
    g_subscribed.clear();
    set_graph_level(on, nullptr, lazy ? fake_enable : nullptr);
    set_graph_callbacks(api, nullptr, true, error);
    EXPECT_EQ(g_subscribed.size(), 6u);
    EXPECT_TRUE(g_subscribed.count(node_created));
    EXPECT_FALSE(g_subscribed.count(instantiate));
  }
  g_subscribed.clear();
  set_graph_level(true, fake_disable, fake_enable);
  EXPECT_GT(set_graph_callbacks(api, nullptr, true, error), 6);
  EXPECT_TRUE(g_subscribed.count(instantiate));
  EXPECT_TRUE(g_subscribed.count(
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000}));
  for (auto [domain, cbid] : g_subscribed) {
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) {
      EXPECT_TRUE(is_graph_creation(static_cast<CUpti_CallbackDomain>(domain), cbid)) << cbid;
    }
  }
  // Stop: everything off, whatever the state then.
  set_graph_level(false);
  set_graph_callbacks(api, nullptr, false, error);
  EXPECT_TRUE(g_subscribed.empty());
  EXPECT_TRUE(error.empty()) << error;
}

TEST_F(GraphCallbacks, ConditionalNodeMakesTheFanoutUnknown) {
  captured_launch(60, 0x40000, 0x400);
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
           node(0x40010, 0x400, CU_GRAPH_NODE_TYPE_CONDITIONAL));
  drain_tags();
  CUpti_GraphData exec{};
  exec.graph = handle<CUgraph>(0x400);
  exec.graphExec = handle<CUgraphExec>(0x410);
  resource(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, exec);
  EXPECT_EQ(launch_fanout_of(0x410, 61), 0u);
}

TEST_F(GraphCallbacks, NothingIsCapturedWhilePaused) {
  api(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 70);
  LaunchStage::active_sessions = 0;  // paused between enter and exit: the exit is never seen
  resource(CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, node(0x50000, 0x500));
  std::vector<uint64_t> captured;
  GraphRegistry::global().take_captured(captured);
  EXPECT_TRUE(captured.empty());
}

TEST_F(GraphCallbacks, ResourceDataWithoutGraphDataIsIgnored) {
  CUpti_ResourceData data{};
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, &data);
  EXPECT_EQ(graph_callback_errors(), 0u);
}

// CUPTI hands out records as CUpti_Activity* into its buffer; so does this.
const CUpti_Activity* activity(const void* record) {
  return static_cast<const CUpti_Activity*>(record);
}

TEST(GraphRecords, GraphTraceBecomesOneRecordOnTheLaunch) {
  CUpti_ActivityGraphTrace2 g{};
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.correlationId = 77;
  g.start = 1000;
  g.end = 5000;
  g.deviceId = 1;
  g.graphId = 12;
  g.streamId = 7;
  KernelRecord r;
  ASSERT_TRUE(translate_graph_trace(*activity(&g), r));
  EXPECT_EQ(r.correlation, 77u);
  EXPECT_EQ(r.end_ns - r.start_ns, 4000u);
  EXPECT_EQ(NameTable::global().name(r.name), kGraphRecordName);
  EXPECT_EQ(r.graph_id, 12u);
  EXPECT_EQ(r.graph_node_id, 0u);
  g.deviceId = 0x7fffffff;  // the graph starts on the host
  ASSERT_TRUE(translate_graph_trace(*activity(&g), r));
  EXPECT_EQ(r.device_id, 0u);

  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  EXPECT_FALSE(translate_graph_trace(other, r));
}

TEST(GraphRecords, GraphModeDropsNodeKernelsOnly) {
  KernelRecord node;
  node.graph_id = 3;
  node.graph_node_id = 9;
  KernelRecord plain;
  EXPECT_TRUE(keep_kernel_record(node));
  set_graph_level(true);
  EXPECT_FALSE(keep_kernel_record(node));
  EXPECT_TRUE(keep_kernel_record(plain));
  set_graph_level(false);
}

}  // namespace
}  // namespace proton::cupti
