// Launch metadata (hook="triton") and the Python-context provider, from launch tag to Hatchet
// output, through the real runtime over a fake backend.
#include "context/launch_ops.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "attribution/launch_stage.h"
#include "context/thread_context.h"
#include "data/device_metric_sites.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

TEST(LaunchOps, InternsByContent) {
  auto& ops = LaunchOps::global();
  uint32_t a = ops.intern(id("mm"), {{id("flops16"), 2.0}, {id("bytes"), int64_t{8}}});
  uint32_t b = ops.intern(id("mm"), {{id("flops16"), 2.0}, {id("bytes"), int64_t{8}}});
  uint32_t c = ops.intern(id("mm"), {{id("flops16"), 4.0}, {id("bytes"), int64_t{8}}});
  uint32_t d = ops.intern(kNoName, {});
  EXPECT_GE(a, 1u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(ops.get(a).name, id("mm"));
  ASSERT_EQ(ops.get(c).metrics.size(), 2u);
  EXPECT_EQ(std::get<double>(ops.get(c).metrics[0].second), 4.0);
}

TEST(LaunchOps, PendingOpTagsOneLaunchOfItsThreadOnly) {
  LaunchStage::drain([](const LaunchTag&) {});
  uint32_t op = LaunchOps::global().intern(id("only_once"), {});
  LaunchOps::set_pending(op);
  std::thread other([] { LaunchStage::tag(2); });  // another thread's launch: no op
  other.join();
  LaunchStage::tag(1);
  LaunchStage::tag(3);
  std::map<uint64_t, uint32_t> ops;
  LaunchStage::drain([&](const LaunchTag& t) { ops[t.correlation] = t.op; });
  EXPECT_EQ(ops[1], op);
  EXPECT_EQ(ops[2], 0u);
  EXPECT_EQ(ops[3], 0u);
}

class LaunchOpSessions : public testing::RuntimeFixture {
 protected:
  LaunchOpSessions() : RuntimeFixture("proton_launch_ops_test_", 5000) {}
  void TearDown() override {
    RuntimeFixture::TearDown();
    LaunchStage::python_context_provider.store(nullptr);
  }
  SessionConfig config(const std::string& name, const std::string& context = "shadow") {
    SessionConfig c = RuntimeFixture::config(name);
    c.context = context;
    return c;
  }
};

TEST_F(LaunchOpSessions, OpRenamesTheKernelAndAddsItsMetricsPerLaunch) {
  SessionId s = rt_.start(config("ops"));
  uint32_t op = LaunchOps::global().intern(id("matmul_1024"),
                                           {{id("flops16"), 2.0e9}, {id("bytes"), int64_t{100}}});
  for (int i = 0; i < 3; ++i) {
    LaunchOps::set_pending(op);
    launch("matmul_kernel", 10);
  }
  launch("matmul_kernel", 5);  // no metadata: keeps its own name and no metrics
  rt_.finalize(s, "");
  json root = read("ops")[0];
  const json* renamed = child(root, "matmul_1024");
  ASSERT_NE(renamed, nullptr) << root.dump(1);
  EXPECT_EQ((*renamed)["metrics"]["count"], 3);
  EXPECT_EQ((*renamed)["metrics"]["time (ns)"], 30);
  EXPECT_DOUBLE_EQ((*renamed)["metrics"]["flops16"].get<double>(), 6.0e9);
  EXPECT_EQ((*renamed)["metrics"]["bytes"], 300);
  const json* plain = child(root, "matmul_kernel");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ((*plain)["metrics"]["count"], 1);
  EXPECT_FALSE((*plain)["metrics"].contains("flops16"));
}

TEST_F(LaunchOpSessions, OpWithoutANameKeepsTheKernelName) {
  SessionId s = rt_.start(config("unnamed"));
  LaunchOps::set_pending(LaunchOps::global().intern(kNoName, {{id("bytes"), int64_t{4}}}));
  launch("k", 1);
  rt_.finalize(s, "");
  json root = read("unnamed")[0];
  const json* k = child(root, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ((*k)["metrics"]["bytes"], 4);
}

ContextId g_python_path = kRootContext;
ContextId fake_python_context() noexcept {
  return g_python_path;
}

TEST_F(LaunchOpSessions, PythonSessionsUseTheProviderAndFallBackToShadow) {
  g_python_path = ContextTree::global().child(
      ContextTree::global().child(kRootContext, id("main.py:3@<module>")), id("main.py:1@f"));
  LaunchStage::python_context_provider.store(&fake_python_context);
  SessionId py = rt_.start(config("py", "python"));
  SessionId sh = rt_.start(config("sh"));
  EXPECT_NE(LaunchStage::python_sessions.load() & (SessionMask{1} << rt_.slot_for_testing(py)), 0u);
  ThreadContext::current().enter_scope(id("user_scope"));
  launch("k", 1);
  g_python_path = kRootContext;  // a thread without Python frames
  launch("no_frames", 1);
  ThreadContext::current().exit_scope(id("user_scope"));
  rt_.finalize(py, "");
  rt_.finalize(sh, "");
  EXPECT_EQ(LaunchStage::python_sessions.load(), 0u);

  json p = read("py")[0];
  const json* f = child(*child(p, "main.py:3@<module>"), "main.py:1@f");
  ASSERT_NE(f, nullptr) << p.dump(1);
  EXPECT_NE(child(*f, "k"), nullptr);
  // Scopes are not part of Python paths; a launch with no frames keeps its shadow context.
  EXPECT_NE(child(*child(p, "user_scope"), "no_frames"), nullptr) << p.dump(1);
  json s = read("sh")[0];
  EXPECT_NE(child(*child(s, "user_scope"), "k"), nullptr) << s.dump(1);
}

TEST_F(LaunchOpSessions, NoWalkWhileNoPythonSessionIsActive) {
  static int calls = 0;
  LaunchStage::python_context_provider.store(+[]() noexcept {
    ++calls;
    return kRootContext;
  });
  SessionId py = rt_.start(config("py2", "python"));
  launch("k", 1);
  EXPECT_EQ(calls, 1);
  rt_.deactivate(py, false);
  SessionId sh = rt_.start(config("sh2"));
  launch("k", 1);
  EXPECT_EQ(calls, 1);
  rt_.finalize(sh, "");
  rt_.finalize(py, "");
}

}  // namespace
}  // namespace proton

namespace proton {
namespace {

// launch_metadata tensors: each launch added its value to a device slot; the slot's read-back
// goes to the kernel nodes its launches reached, split by their launches since the last one.
TEST_F(LaunchOpSessions, DeviceSlotValuesGoToTheKernelNodesTheirLaunchesReached) {
  SessionId s = rt_.start(config("slots"));
  uint32_t op = LaunchOps::global().intern(kNoName, {{id("flops"), 0.0}, {id("tiles"), int64_t{0}}},
                                           {{id("flops"), 7}, {id("tiles"), 8}});
  auto launches = [&](const char* scope, int n) {
    ThreadContext::current().enter_scope(id(scope));
    for (int i = 0; i < n; ++i) {
      LaunchOps::set_pending(op);
      launch("dev_kernel", 10);
    }
    ThreadContext::current().exit_scope(id(scope));
  };
  launches("a", 3);
  launches("b", 1);
  EXPECT_FALSE(rt_.add_device_slot_value(s, 7, id("flops"), 40.0)) << "no kernel placed yet";
  rt_.flush();
  EXPECT_TRUE(rt_.add_device_slot_value(s, 7, id("flops"), 40.0));
  EXPECT_TRUE(rt_.add_device_slot_value(s, 8, id("tiles"), MetricValue{int64_t{10}}));
  EXPECT_FALSE(rt_.add_device_slot_value(s, 9, id("flops"), 1.0)) << "a slot no launch used";
  EXPECT_FALSE(rt_.add_device_slot_value(s + 100, 7, id("flops"), 1.0)) << "no such session";
  launches("b", 2);  // only b's launches added what is read back next
  rt_.flush();
  EXPECT_TRUE(rt_.add_device_slot_value(s, 7, id("flops"), 8.0));
  rt_.finalize(s, "");
  json root = read("slots")[0];
  const json* a = child(*child(root, "a"), "dev_kernel");
  const json* b = child(*child(root, "b"), "dev_kernel");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((*a)["metrics"]["count"], 3);
  EXPECT_DOUBLE_EQ((*a)["metrics"]["flops"].get<double>(), 30.0);
  EXPECT_DOUBLE_EQ((*b)["metrics"]["flops"].get<double>(), 18.0);
  // Integer shares keep the total exact, the remainder to the node with more launches.
  EXPECT_EQ((*a)["metrics"]["tiles"], 8);
  EXPECT_EQ((*b)["metrics"]["tiles"], 2);
}

TEST(DeviceMetricSites, OneSiteGetsTheWholeValueAPropertyEverySiteClearedPhasesNone) {
  CallTree tree;
  CallTree::NodeId k1 = tree.child(CallTree::kRoot, id("k1"));
  CallTree::NodeId k2 = tree.child(CallTree::kRoot, id("k2"));
  DeviceMetricSites sites;
  auto tree_of = [&](uint32_t phase) { return phase == 0 ? &tree : nullptr; };
  sites.note(1, 0, k1);
  EXPECT_TRUE(sites.place(1, id("n"), MetricValue{int64_t{5}}, tree_of));
  EXPECT_EQ(std::get<int64_t>(tree.node(k1).metrics.at(0).second), 5);
  sites.note(2, 0, k1);
  sites.note(2, 0, k2);
  sites.note(2, 1, k2);  // a phase written out: its share is not placed anywhere else
  EXPECT_TRUE(sites.place(2, id("lr (pty)"), 0.5, tree_of));
  EXPECT_TRUE(sites.place(2, id("m"), 9.0, tree_of));
  double m1 = 0, m2 = 0;
  for (const auto& [n, v] : tree.node(k1).metrics)
    if (n == id("m")) m1 = std::get<double>(v);
  for (const auto& [n, v] : tree.node(k2).metrics)
    if (n == id("m")) m2 = std::get<double>(v);
  EXPECT_DOUBLE_EQ(m1, 3.0);
  EXPECT_DOUBLE_EQ(m2, 3.0);
  sites.forget_phases(0, true);
  sites.forget_phases(1, false);
  EXPECT_FALSE(sites.place(2, id("m"), 1.0, tree_of));
}

}  // namespace
}  // namespace proton
