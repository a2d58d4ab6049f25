// A session keeps each kind of record through the collector of that concern, the ones its
// options ask for, all handed the same Record through Session::collect.
#include <gtest/gtest.h>

#include <vector>

#include "attribution/record.h"
#include "session/session.h"
#include "test_util.h"

namespace proton {
namespace {

using testing::id;

struct Collected {
  const CallTree::Node* kernel = nullptr;  // root/"gemm"
  const CallTree::Node* region = nullptr;  // root/"gemm"/"loop"
};

Collected find(Session& s) {
  Collected out;
  CallTree& t = s.tree();
  for (CallTree::NodeId k : t.node(CallTree::kRoot).children) {
    if (t.node(k).name != id("gemm")) continue;
    out.kernel = &t.node(k);
    for (CallTree::NodeId r : t.node(k).children)
      if (t.node(r).name == id("loop")) out.region = &t.node(r);
  }
  return out;
}

/// One kernel "gemm" of 20 ns, its region "loop", 3 lost records, a scope event and PC samples,
/// each handed to `s` as a Record.
void hand_everything(Session& s) {
  LaunchTag tag{};
  tag.correlation = 7;
  tag.sessions = 1;
  tag.fanout = 1;
  KernelRecord r;
  r.correlation = 7;
  r.start_ns = 10;
  r.end_ns = 30;
  r.name = id("gemm");
  r.launch.grid = {132, 1, 1};
  r.launch.block = {256, 1, 1};
  r.launch.registers_per_thread = 64;
  s.collect(KernelDone{tag, r});
  std::vector<RegionTotals> totals{{{id("loop")}, 100, 2}};
  s.collect(LaunchRegions{kRootContext, id("gemm"), totals, 8, 0, {}, {}});
  s.collect(RecordsLost{3});
  LaunchTag scope = tag;
  scope.flags = kTagScopeEnter;
  s.collect(ScopeEvent{scope});  // no trace: no collector takes it
  PcSampleBatch pc;
  s.collect(PcSamples{pc});  // no PC sampling: no collector takes it
}

TEST(SessionCollectors, ATreeSessionKeepsKernelsRegionsAndLosses) {
  testing::MainThreadFixture main;
  SessionConfig config;
  Session s(0, config);
  hand_everything(s);
  std::lock_guard lock(s.mu);
  Collected got = find(s);
  ASSERT_NE(got.kernel, nullptr);
  EXPECT_TRUE(got.kernel->has_kernel);
  EXPECT_EQ(got.kernel->kernel.time_ns, 20u);
  EXPECT_EQ(got.kernel->kernel.count, 1u);
  EXPECT_EQ(got.kernel->launch.block[0], 256u);  // the record's launch facts, on its node
  EXPECT_EQ(got.kernel->launch.registers_per_thread, 64u);
  ASSERT_NE(got.region, nullptr);
  EXPECT_TRUE(got.region->has_cycles);
  EXPECT_EQ(s.dropped_records, 3u);
  EXPECT_EQ(s.trace(), nullptr);
  EXPECT_EQ(s.pc_attribution(), nullptr);
}

TEST(SessionCollectors, ASessionKeepingRegionCyclesOnlyLeavesKernelRecordsAlone) {
  testing::MainThreadFixture main;
  SessionConfig config;
  config.kernel_records = false;  // on for another session only
  Session s(0, config);
  hand_everything(s);
  std::lock_guard lock(s.mu);
  Collected got = find(s);
  ASSERT_NE(got.kernel, nullptr);  // the regions' kernel node, with no kernel time
  EXPECT_FALSE(got.kernel->has_kernel);
  ASSERT_NE(got.region, nullptr);
  EXPECT_TRUE(got.region->has_cycles);
}

}  // namespace
}  // namespace proton
