#include "data/call_tree.h"

#include <gtest/gtest.h>

#include "common/name_table.h"
#include "context/context_tree.h"
#include "test_util.h"

namespace proton {
namespace {

using testing::id;

TEST(CallTree, ChildrenAreReusedByName) {
  CallTree t;
  auto a = t.child(CallTree::kRoot, id("a"));
  EXPECT_EQ(t.child(CallTree::kRoot, id("a")), a);
  auto b = t.child(a, id("b"));
  EXPECT_NE(b, a);
  EXPECT_EQ(t.node(CallTree::kRoot).children, std::vector<CallTree::NodeId>{a});
  EXPECT_EQ(t.node(b).parent, a);
  EXPECT_EQ(NameTable::global().name(t.node(CallTree::kRoot).name), "ROOT");
}

TEST(CallTree, ContextPathsMapOntoNodes) {
  auto& ctx = ContextTree::global();
  ContextId outer = ctx.child(kRootContext, id("outer"));
  ContextId inner = ctx.child(outer, id("inner"));
  CallTree t;
  auto n = t.node_for_context(inner);
  EXPECT_EQ(NameTable::global().name(t.node(n).name), "inner");
  EXPECT_EQ(NameTable::global().name(t.node(t.node(n).parent).name), "outer");
  EXPECT_EQ(t.node_for_context(inner), n);
  EXPECT_EQ(t.node_for_context(kRootContext), CallTree::kRoot);
  EXPECT_EQ(t.size(), 3u);
}

TEST(CallTree, KernelsAccumulateTimeAndCount) {
  CallTree t;
  auto k = t.child(CallTree::kRoot, id("kernel"));
  t.add_kernel(k, 100, 1, DeviceType::kCuda);
  t.add_kernel(k, 50, 1, DeviceType::kCuda);
  EXPECT_EQ(t.node(k).kernel.time_ns, 150u);
  EXPECT_EQ(t.node(k).kernel.count, 2u);
  EXPECT_TRUE(t.has_kernels());
  EXPECT_EQ(t.devices_seen(DeviceType::kCuda), 0b10u);
}

LaunchFacts facts(uint32_t grid, uint16_t block, uint16_t registers) {
  LaunchFacts f;
  f.grid = {grid, 1, 1};
  f.block = {block, 1, 1};
  f.registers_per_thread = registers;
  return f;
}

TEST(CallTree, AKernelNodeKeepsItsLastLaunchConfigurationAndNotesAChange) {
  CallTree t;
  auto k = t.child(CallTree::kRoot, id("gemm"));
  t.add_kernel(k, 10, 0, DeviceType::kCuda);
  t.note_launch(k, LaunchFacts{});  // unknown (graph-level record): nothing kept
  EXPECT_FALSE(t.node(k).launch.known());
  t.note_launch(k, facts(264, 128, 96));
  t.note_launch(k, facts(264, 128, 96));
  EXPECT_EQ(t.node(k).launch, facts(264, 128, 96));
  EXPECT_FALSE(t.node(k).launch_varies);
  t.note_launch(k, facts(16, 128, 96));  // another shape, another grid
  t.note_launch(k, LaunchFacts{});       // unknown facts never erase known ones
  EXPECT_EQ(t.node(k).launch, facts(16, 128, 96));
  EXPECT_TRUE(t.node(k).launch_varies);
  t.clear();
  EXPECT_FALSE(t.node(CallTree::kRoot).launch.known());
}

TEST(CallTree, MetricsFollowNameRules) {
  CallTree t;
  auto n = t.child(CallTree::kRoot, id("scope"));
  t.add_metric(n, id("bytes"), int64_t{10});
  t.add_metric(n, id("bytes"), 5.0);  // coerced to int, so no type change
  t.add_metric(n, id("v (pty)"), int64_t{1});
  t.add_metric(n, id("v (pty)"), int64_t{4});
  t.add_metric(n, id("flops16"), int64_t{2});
  t.add_metric(n, id("vec"), std::vector<int64_t>{1, 2});
  t.add_metric(n, id("vec"), std::vector<int64_t>{1, 1});
  const auto& m = t.node(n).metrics;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(std::get<int64_t>(m[0].second), 15);
  EXPECT_EQ(std::get<int64_t>(m[1].second), 4);
  EXPECT_EQ(std::get<double>(m[2].second), 2.0);
  EXPECT_EQ(std::get<std::vector<int64_t>>(m[3].second), (std::vector<int64_t>{2, 3}));
}

TEST(CallTree, TypeChangeNamesMetricAndBothTypes) {
  CallTree t;
  auto a = t.child(CallTree::kRoot, id("a"));
  auto b = t.child(CallTree::kRoot, id("b"));
  t.add_metric(a, id("latency"), int64_t{1});
  try {
    t.add_metric(b, id("latency"), 2.5);  // another node: types are per tree
    FAIL() << "expected MetricTypeError";
  } catch (const MetricTypeError& e) {
    EXPECT_STREQ(
        e.what(),
        "Metric value type mismatch for valueId of metric 'latency': it was int, now float");
  }
  EXPECT_TRUE(t.node(b).metrics.empty());
}

TEST(CallTree, ClearLeavesOnlyRoot) {
  CallTree t;
  auto a = t.child(CallTree::kRoot, id("a"));
  t.add_kernel(a, 1, 0, DeviceType::kCuda);
  t.clear();
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.has_kernels());
  EXPECT_TRUE(t.node(CallTree::kRoot).children.empty());
}

}  // namespace
}  // namespace proton
