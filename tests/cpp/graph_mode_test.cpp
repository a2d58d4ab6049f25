// CUDA graphs through the whole Runtime (sessions, phases, Hatchet output) with a fake backend:
// the default per-node mode and mode="graph".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attribution/graph_registry.h"
#include "attribution/launch_stage.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

class GraphModes : public testing::RuntimeFixture {
 protected:
  GraphModes() : RuntimeFixture("proton_graph_mode_test_", 0) {}
  KernelRecord record(uint64_t correlation, const std::string& name, uint64_t graph,
                      uint64_t node) {
    KernelRecord r;
    r.correlation = correlation;
    r.start_ns = 1000;
    r.end_ns = 1500;
    r.name = id(name);
    r.graph_id = graph;
    r.graph_node_id = node;
    return r;
  }
};

TEST_F(GraphModes, DefaultModeShowsReplaysUnderTheCaptureSite) {
  SessionId s = rt_.start(config("nodes", ""));
  auto& tc = ThreadContext::current();
  GraphRegistry& registry = GraphRegistry::global();
  tc.enter_scope(id("capture"));
  CaptureSite site{ThreadContext::launch_context(), kRootContext, 0};
  registry.node_created(0xA001, 0xA0, GraphNodeKind::kKernel, &site);
  registry.node_created(0xA002, 0xA0, GraphNodeKind::kKernel, &site);
  tc.exit_scope(id("capture"));
  uint32_t fanout = registry.exec_created(0xA1, 0xA0);
  ASSERT_EQ(fanout, 2u);
  tc.enter_scope(id("replay"));
  for (uint64_t c = 1; c <= 10; ++c) {
    LaunchStage::tag(c, fanout);
    fake_->complete(record(c, "gemm", 0xA1, 0xA001));
    fake_->complete(record(c, "relu", 0xA1, 0xA002));
  }
  tc.exit_scope(id("replay"));
  json tree = json::parse(rt_.hatchet_json(s))[0];
  const json* replay = child(tree, "replay");
  ASSERT_NE(replay, nullptr);
  const json* captured = child(*replay, "<captured_at>");
  ASSERT_NE(captured, nullptr);
  const json* capture = child(*captured, "capture");
  ASSERT_NE(capture, nullptr);
  EXPECT_EQ((*child(*capture, "gemm"))["metrics"]["count"], 10);
  EXPECT_EQ((*child(*capture, "relu"))["metrics"]["count"], 10);
  EXPECT_EQ((*child(*capture, "relu"))["metrics"]["time (ns)"], 5000);
  EXPECT_EQ(rt_.processor().stats().pending_tags, 0u);
}

// A replay of a graph captured before start has an unknown fan-out, so its tag stays open. If
// its session is finalized meanwhile and a new session takes the freed slot, the replay's
// kernels go to the sessions that saw the launch, never to the newcomer.
TEST_F(GraphModes, AReusedSessionSlotGetsNoKernelsOfEarlierLaunches) {
  SessionId a = rt_.start(config("a", ""));
  SessionId b = rt_.start(config("b", ""));
  LaunchStage::tag(500, 0);
  fake_->complete(record(500, "early", 0xB1, 0xB001));
  SessionId slot_a = rt_.slot_for_testing(a);
  rt_.finalize(a, "");
  SessionId c = rt_.start(config("c", ""));
  EXPECT_NE(c, a);  // ids are never reused...
  ASSERT_EQ(rt_.slot_for_testing(c), slot_a) << "the test needs the slot reused";  // slots are
  fake_->complete(record(500, "late", 0xB1, 0xB002));
  json tree_c = json::parse(rt_.hatchet_json(c))[0];
  EXPECT_EQ(child(tree_c, "late"), nullptr) << tree_c.dump();
  json tree_b = json::parse(rt_.hatchet_json(b))[0];
  EXPECT_NE(child(tree_b, "late"), nullptr) << tree_b.dump();
}

TEST_F(GraphModes, GraphModeShowsOneNodePerLaunchSite) {
  SessionId s = rt_.start(config("graphs", "graph"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("decode"));
  for (uint64_t c = 100; c < 110; ++c) {
    LaunchStage::tag(c, 1);
    fake_->complete(record(c, "<cuda graph>", 0xB1, 0));
  }
  tc.exit_scope(id("decode"));
  json tree = json::parse(rt_.hatchet_json(s))[0];
  const json* decode = child(tree, "decode");
  ASSERT_NE(decode, nullptr);
  ASSERT_EQ((*decode)["children"].size(), 1u);
  const json& graph = (*decode)["children"][0];
  EXPECT_EQ(graph["frame"]["name"], "<cuda graph>");
  EXPECT_EQ(graph["metrics"]["count"], 10);
  EXPECT_EQ(graph["metrics"]["time (ns)"], 5000);
}

TEST_F(GraphModes, SessionsRunningTogetherMustAgreeOnTheMode) {
  rt_.start(config("a", "graph"));
  try {
    rt_.start(config("b", ""));
    FAIL() << "a default-mode session started next to a graph-mode one";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("mode='graph'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(rt_.start(config("c", "graph")));
  EXPECT_THROW(rt_.start(config("d", "graphs")), std::invalid_argument);
}

}  // namespace
}  // namespace proton
