// CUDA-graph attribution on the CPU: the resource events a backend reports (capture, instantiate,
// clone, destroy) are replayed by hand into a GraphRegistry, launches are tagged as the launch
// callback tags them, and synthetic kernel records go through the real RecordProcessor into a
// real Session, whose call tree is then read back.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "attribution/graph_attribution.h"
#include "attribution/graph_registry.h"
#include "attribution/record_processor.h"
#include "context/launch_ops.h"
#include "session/session.h"
#include "test_util.h"

namespace proton {
namespace {

using testing::id;

// Delivers into one session, as Runtime does for session 0.
class SessionSink : public RecordSink {
 public:
  explicit SessionSink(Session& s) : session(s) {}
  void deliver(SessionMask, const Record& record) override {
    if (!std::holds_alternative<KernelDone>(record)) return;
    session.collect(record);
    ++delivered;
  }
  Session& session;
  uint64_t delivered = 0;
};

// Path of every kernel node of the tree ("a/b/kernel") -> count.
void collect(const CallTree& t, CallTree::NodeId n, const std::string& prefix,
             std::map<std::string, uint64_t>& out) {
  const CallTree::Node& node = t.node(n);
  std::string path =
      n == CallTree::kRoot ? "" : prefix + std::string(NameTable::global().name(node.name));
  if (node.has_kernel) out[path] += node.kernel.count;
  for (CallTree::NodeId c : node.children)
    collect(t, c, path.empty() ? "" : path + "/", out);
}

std::map<std::string, uint64_t> kernels_of(Session& s) {
  std::map<std::string, uint64_t> out;
  std::lock_guard lock(s.mu);
  collect(s.tree(), CallTree::kRoot, "", out);
  return out;
}

// A program using graphs, seen the way the CUPTI backend reports it.
class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    LaunchStage::drain([](const LaunchTag&) {});
    LaunchStage::active_sessions = 1;
  }
  void TearDown() override { LaunchStage::active_sessions = 0; }

  // Stream capture of `kernels` launches into graph `graph` on the calling thread; node ids
  // are node_base + i. Returns the capture-time correlations.
  std::vector<uint64_t> capture(uint32_t graph, uint64_t node_base, int kernels, uint32_t op = 0) {
    std::vector<uint64_t> correlations;
    for (int i = 0; i < kernels; ++i) {
      uint64_t c = next_correlation_++;
      LaunchStage::tag(c, 1);  // the launch callback runs at API entry, capturing or not
      CaptureSite site{ThreadContext::launch_context(), kRootContext, op};
      registry_.node_created(node_base + static_cast<uint64_t>(i), graph, GraphNodeKind::kKernel,
                             &site);
      registry_.captured_launch(c);  // CREATED came inside that launch: it was captured
      correlations.push_back(c);
    }
    return correlations;
  }

  // cudaGraphInstantiate: every node copied into `exec` (CREATED then CLONED), ids + offset.
  uint32_t instantiate(uint32_t exec, uint32_t source, uint64_t node_base, int nodes,
                       uint64_t offset) {
    for (int i = 0; i < nodes; ++i) {
      uint64_t original = node_base + static_cast<uint64_t>(i);
      CaptureSite here{ThreadContext::launch_context(), kRootContext, 0};
      registry_.node_created(original + offset, exec, GraphNodeKind::kKernel, &here);
      registry_.node_cloned(original + offset, exec, original, GraphNodeKind::kKernel);
    }
    return registry_.exec_created(exec, source);
  }

  // One replay: a graph launch tagged with `fanout` (0 for unknown), then its kernel records.
  void replay(uint32_t exec, uint64_t node_base, int nodes, uint32_t fanout,
              std::vector<KernelRecord>& out) {
    uint64_t c = next_correlation_++;
    if (fanout != 0 && fanout != GraphRegistry::kUnknownFanout) {
      LaunchStage::tag(c, fanout);
    } else {
      LaunchStage::tag(c, 0);
    }
    for (int i = 0; i < nodes; ++i) {
      KernelRecord r;
      r.correlation = c;
      r.start_ns = 100;
      r.end_ns = 110;
      r.name = id("k" + std::to_string(i));
      r.graph_id = exec;
      r.graph_node_id = node_base + static_cast<uint64_t>(i);
      out.push_back(r);
    }
  }

  testing::MainThreadFixture main_;
  GraphRegistry registry_;
  Session session_{0, SessionConfig{}};
  SessionSink sink_{session_};
  RecordProcessor proc_{sink_, registry_};
  uint64_t next_correlation_ = 1000;
};

TEST_F(Graphs, TenReplaysOfFiveKernelsCountTenEachUnderTheCaptureSite) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("model"));
  capture(/*graph=*/7, /*nodes=*/100, 5);
  tc.exit_scope(id("model"));
  uint32_t fanout = instantiate(/*exec=*/8, 7, 100, 5, /*offset=*/1000);
  EXPECT_EQ(fanout, 5u);

  tc.enter_scope(id("serve"));
  std::vector<KernelRecord> records;
  for (int i = 0; i < 10; ++i)
    replay(8, 1100, 5, fanout, records);
  tc.exit_scope(id("serve"));
  proc_.process(records);

  auto got = kernels_of(session_);
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got["serve/<captured_at>/model/k" + std::to_string(i)], 10u) << i;
  }
  // Every tag is gone: the capture-time ones (never run) and the replays (counted down).
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
  EXPECT_EQ(proc_.stats().unattributed, 0u);
}

TEST_F(Graphs, CaptureTimeLaunchesLeaveNoTagBehind) {
  capture(3, 300, 4);
  proc_.process({});
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
  // Their phase is complete: nothing of epoch 0 is waiting for kernels.
  EXPECT_EQ(proc_.oldest_open_epoch(), LaunchStage::phase_epoch.load());
}

TEST_F(Graphs, ClonesOfClonesMapBackToTheOriginalCapture) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("build"));
  capture(20, 2000, 2);
  tc.exit_scope(id("build"));
  // cudaGraphClone, then an instantiation of the clone made under another scope.
  for (int i = 0; i < 2; ++i) {
    registry_.node_created(2100 + static_cast<uint64_t>(i), 21, GraphNodeKind::kKernel, nullptr);
    registry_.node_cloned(2100 + static_cast<uint64_t>(i), 21, 2000 + static_cast<uint64_t>(i),
                          GraphNodeKind::kKernel);
  }
  tc.enter_scope(id("elsewhere"));
  uint32_t fanout = instantiate(22, 21, 2100, 2, 100);
  tc.exit_scope(id("elsewhere"));
  EXPECT_EQ(fanout, 2u);

  std::vector<KernelRecord> records;
  replay(22, 2200, 2, fanout, records);
  proc_.process(records);
  auto got = kernels_of(session_);
  EXPECT_EQ(got["<captured_at>/build/k0"], 1u);
  EXPECT_EQ(got["<captured_at>/build/k1"], 1u);
  EXPECT_EQ(got.size(), 2u);
}

TEST_F(Graphs, CloneReportedBeforeCreatedKeepsTheOriginalSite) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("cap"));
  capture(30, 3000, 1);
  tc.exit_scope(id("cap"));
  registry_.node_cloned(3100, 31, 3000, GraphNodeKind::kKernel);
  tc.enter_scope(id("inst"));
  CaptureSite here{ThreadContext::launch_context(), kRootContext, 0};
  registry_.node_created(3100, 31, GraphNodeKind::kKernel, &here);
  tc.exit_scope(id("inst"));
  CaptureSite site;
  ASSERT_TRUE(registry_.site(3100, site));
  EXPECT_EQ(testing::path_of(site.context), "cap");
}

TEST_F(Graphs, MultiStreamCaptureKeepsEachLaunchSite) {
  // Two streams captured into one graph from two scopes (torch: side streams forked with
  // wait_stream inside the capture); the exec runs all of them per launch.
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("main_stream"));
  capture(40, 4000, 2);
  tc.exit_scope(id("main_stream"));
  tc.enter_scope(id("side_stream"));
  capture(40, 4002, 2);
  tc.exit_scope(id("side_stream"));
  uint32_t fanout = instantiate(41, 40, 4000, 4, 100);
  EXPECT_EQ(fanout, 4u);
  std::vector<KernelRecord> records;
  for (int i = 0; i < 3; ++i)
    replay(41, 4100, 4, fanout, records);
  proc_.process(records);
  auto got = kernels_of(session_);
  EXPECT_EQ(got["<captured_at>/main_stream/k0"], 3u);
  EXPECT_EQ(got["<captured_at>/main_stream/k1"], 3u);
  EXPECT_EQ(got["<captured_at>/side_stream/k2"], 3u);
  EXPECT_EQ(got["<captured_at>/side_stream/k3"], 3u);
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
}

TEST_F(Graphs, LaunchMetadataOfACapturedLaunchCountsPerReplay) {
  uint32_t op = LaunchOps::global().intern(id("matmul_128"), {{id("flops"), MetricValue{2.0}}});
  capture(50, 5000, 1, op);
  uint32_t fanout = instantiate(51, 50, 5000, 1, 100);
  std::vector<KernelRecord> records;
  for (int i = 0; i < 4; ++i)
    replay(51, 5100, 1, fanout, records);
  proc_.process(records);
  std::lock_guard lock(session_.mu);
  const CallTree& t = session_.tree();
  bool found = false;
  for (size_t n = 0; n < t.size(); ++n) {
    const CallTree::Node& node = t.node(static_cast<CallTree::NodeId>(n));
    if (NameTable::global().name(node.name) != "matmul_128") continue;
    found = true;
    EXPECT_EQ(node.kernel.count, 4u);
    ASSERT_EQ(node.metrics.size(), 1u);
    EXPECT_DOUBLE_EQ(std::get<double>(node.metrics[0].second), 8.0);
  }
  EXPECT_TRUE(found);
}

TEST_F(Graphs, PythonSessionsGetPythonPathsOnBothSides) {
  ContextTree& tree = ContextTree::global();
  ContextId capture_py = tree.child(tree.child(kRootContext, id("model.py:forward")), id("mlp"));
  ContextId replay_py = tree.child(kRootContext, id("serve.py:step"));
  CaptureSite site{kRootContext, capture_py, 0};
  registry_.node_created(11000, 110, GraphNodeKind::kKernel, &site);
  GraphAttribution graphs(registry_);
  LaunchTag launch{};
  launch.python_context = replay_py;
  KernelRecord r;
  r.graph_id = 111;
  r.graph_node_id = 11000;
  LaunchTag tag = graphs.replay_tag(launch, r);
  EXPECT_EQ(testing::path_of(tag.python_context),
            "serve.py:step/<captured_at>/model.py:forward/mlp");
  EXPECT_EQ(testing::path_of(tag.context), "<captured_at>");
  // Same pair again: served from the cache, same id.
  EXPECT_EQ(graphs.replay_tag(launch, r).python_context, tag.python_context);
  EXPECT_EQ(graphs.cached_paths(), 2u);
}

TEST_F(Graphs, GraphFromBeforeStartGoesToTheLaunchSiteWithFlatMemory) {
  // Nothing was reported for exec 60: its kernels sit under the replay's scope, and replaying
  // it 100,000 times keeps the processor's bookkeeping at a few launches.
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("decode"));
  size_t peak = 0;
  for (int batch = 0; batch < 1000; ++batch) {
    std::vector<KernelRecord> records;
    for (int i = 0; i < 100; ++i)
      replay(60, 6000, 3, GraphRegistry::kUnknownFanout, records);
    proc_.process(records);
    peak = std::max<size_t>(peak, proc_.stats().pending_tags);
  }
  tc.exit_scope(id("decode"));
  auto got = kernels_of(session_);
  EXPECT_EQ(got["decode/k0"], 100000u);
  EXPECT_EQ(got["decode/k2"], 100000u);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_LE(peak, 2u);  // the newest two launches of the graph, at most
  EXPECT_EQ(proc_.stats().unattributed, 0u);
}

TEST(GraphNotice, CarriesTritonsPhraseOnceAndSaysWhy) {
  std::string line = unknown_graph_notice(42);
  const std::string phrase = "Cannot find graph for graphExecId: 42";
  size_t at = line.find(phrase);
  ASSERT_NE(at, std::string::npos) << line;
  EXPECT_EQ(line.find("Cannot find graph", at + 1), std::string::npos) << line;
  EXPECT_NE(line.find("captured before profiling started"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one line
}

TEST_F(Graphs, ReplayMemoryDoesNotGrowWithKnownFanout) {
  capture(70, 7000, 5);
  uint32_t fanout = instantiate(71, 70, 7000, 5, 100);
  size_t nodes = registry_.nodes();
  for (int batch = 0; batch < 200; ++batch) {
    std::vector<KernelRecord> records;
    for (int i = 0; i < 50; ++i)
      replay(71, 7100, 5, fanout, records);
    proc_.process(records);
    ASSERT_EQ(proc_.stats().pending_tags, 0u) << batch;
  }
  EXPECT_EQ(registry_.nodes(), nodes);
  EXPECT_EQ(session_.tree().size(), 1u + 1 + 5);  // root, <captured_at>, five kernels
}

TEST_F(Graphs, ConditionalNodesMakeTheFanoutUnknownButStillBounded) {
  capture(80, 8000, 2);
  registry_.node_created(8099, 80, GraphNodeKind::kUncertain, nullptr);  // a while node
  uint32_t fanout = registry_.exec_created(81, 80);
  EXPECT_EQ(fanout, GraphRegistry::kUnknownFanout);
  // The body ran a different number of times per launch: 2, 5, 1, 3 ... kernel records.
  for (int launch = 0; launch < 400; ++launch) {
    std::vector<KernelRecord> records;
    replay(81, 8000, 1 + launch % 5, fanout, records);
    proc_.process(records);
  }
  EXPECT_LE(proc_.stats().pending_tags, 2u);
  EXPECT_EQ(kernels_of(session_)["<captured_at>/k0"], 400u);
}

TEST_F(Graphs, TagsNoRecordEverClaimsFallOutOfABoundedFifo) {
  // A graph without kernel nodes, instantiated before start: no record ever names it.
  for (size_t i = 0; i < GraphAttribution::kMaxUnknownTags + 100; ++i) {
    LaunchStage::tag(next_correlation_++, 0);
  }
  proc_.process({});
  EXPECT_EQ(proc_.stats().pending_tags, GraphAttribution::kMaxUnknownTags);
}

TEST_F(Graphs, DestroyedNodesAreFreedAfterAFlushOnly) {
  capture(90, 9000, 3);
  uint32_t fanout = instantiate(91, 90, 9000, 3, 100);
  std::vector<KernelRecord> records;
  replay(91, 9100, 3, fanout, records);
  registry_.graph_destroyed(90);  // torch drops the captured graph once instantiated
  for (int i = 0; i < 3; ++i)
    registry_.node_destroyed(9100 + static_cast<uint64_t>(i), 91, GraphNodeKind::kKernel);
  proc_.process(records);  // records of the last replay arrive after the destroy
  EXPECT_EQ(kernels_of(session_)["<captured_at>/k1"], 1u);
  EXPECT_EQ(registry_.nodes(), 6u);
  proc_.settle();
  EXPECT_EQ(registry_.nodes(), 0u);
}

TEST_F(Graphs, FanoutPrefersTheSourceGraphAndFallsBackToTheCopies) {
  capture(100, 10000, 3);
  registry_.node_created(10050, 100, GraphNodeKind::kNoKernel, nullptr);  // a memset node
  EXPECT_EQ(registry_.exec_created(101, 100), 3u);
  // Source captured before start: the copies made at instantiation tell the count.
  for (int i = 0; i < 4; ++i) {
    registry_.node_created(10200 + static_cast<uint64_t>(i), 102, GraphNodeKind::kKernel, nullptr);
    registry_.node_cloned(10200 + static_cast<uint64_t>(i), 102, 999999, GraphNodeKind::kKernel);
  }
  EXPECT_EQ(registry_.exec_created(102, /*unknown source=*/12345), 4u);
  EXPECT_EQ(registry_.exec_created(103, 0), GraphRegistry::kUnknownFanout);
  CaptureSite site;
  EXPECT_FALSE(registry_.site(10200, site));  // copies of unknown nodes have no site
}

TEST_F(Graphs, CapturesOnOneThreadWhileRecordsArriveOnAnother) {
  // Resource callbacks (application threads) and the record thread share the registry.
  std::atomic<bool> stop{false};
  std::thread record_thread([&] {
    while (!stop.load()) {
      std::vector<KernelRecord> none;
      proc_.process(none);
      CaptureSite site;
      registry_.site(12000, site);
    }
  });
  for (uint32_t g = 0; g < 200; ++g) {
    uint64_t base = 20000 + uint64_t{g} * 10;
    capture(1000 + g, base, 3);
    uint32_t fanout = instantiate(5000 + g, 1000 + g, base, 3, 100000);
    std::vector<KernelRecord> records;
    replay(5000 + g, base + 100000, 3, fanout, records);
    proc_.process(records);
    registry_.graph_destroyed(1000 + g);
  }
  stop = true;
  record_thread.join();
  proc_.settle();
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
  EXPECT_EQ(kernels_of(session_)["<captured_at>/k2"], 200u);
}

}  // namespace
}  // namespace proton
