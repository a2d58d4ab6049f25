#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::of_rule;
using testing::with_root;

TEST(MissingSources, ATreeAloneAsksForSamplesWorkAndCpuTime) {
  ProfileView v = with_root();
  kernel(v, v.add_node(0, "step"), "k", 1, 1e6);
  auto hints = missing_sources(v);
  EXPECT_EQ(of_rule(hints, "hint.pcsampling").size(), 1u);
  EXPECT_EQ(of_rule(hints, "hint.launch_metadata").size(), 1u);
  EXPECT_EQ(of_rule(hints, "hint.cpu_time").size(), 1u);
  EXPECT_TRUE(of_rule(hints, "hint.ranks").empty());
  for (const Finding& f : hints) {
    EXPECT_FALSE(f.saving_ns.has_value());
    EXPECT_TRUE(f.frame.empty());
  }
}

TEST(MissingSources, QuietWhenEverySourceIsThere) {
  ProfileView v = with_root();
  v.devices.push_back(testing::h100());
  int32_t step = v.add_node(0, "step");
  v.set(step, "cpu_time (ns)", 2e6);
  int32_t k = kernel(v, step, "k", 1, 1e6);
  v.set(k, "bytes", 1e6);
  testing::set_launch(v, k, {});
  v.set(v.add_node(k, "/src/k.py:3@k"), "num_samples", 10);
  v.set(v.add_node(step, "cudaStreamSynchronize"), "sync_time (ns)", 1e3);
  EXPECT_TRUE(missing_sources(v).empty());
}

TEST(MissingSources, AsksForLaunchFactsThenForTheDevicesLimits) {
  ProfileView v = with_root();
  v.devices.push_back(testing::h100());
  int32_t k = kernel(v, 0, "k", 1, 1e6);
  auto hints = missing_sources(v);
  ASSERT_EQ(of_rule(hints, "hint.launch_config").size(), 1u);
  EXPECT_NE(of_rule(hints, "hint.launch_config")[0]->seen.find("'occupancy'"), std::string::npos);
  EXPECT_TRUE(of_rule(hints, "hint.device_limits").empty());
  // The hint comes before the PC-sampling one: the facts cost nothing to record.
  EXPECT_EQ(hints[0].rule, "hint.launch_config");
  testing::set_launch(v, k, {});
  EXPECT_TRUE(of_rule(missing_sources(v), "hint.launch_config").empty());
  EXPECT_TRUE(of_rule(missing_sources(v), "hint.device_limits").empty());
  v.devices[0].max_warps_per_sm = 0;  // a device map from before the limits
  EXPECT_EQ(of_rule(missing_sources(v), "hint.device_limits").size(), 1u);
}

TEST(MissingSources, AsksForHostCallsWhereNoneWasTimed) {
  // Host calls are timed when asked only: any profile without their columns gets the hint.
  ProfileView v = with_root();
  int32_t k = kernel(v, 0, "k", 1, 1e6);
  ASSERT_EQ(of_rule(missing_sources(v), "hint.host_calls").size(), 1u);
  EXPECT_NE(of_rule(missing_sources(v), "hint.host_calls")[0]->seen.find("'host_sync'"),
            std::string::npos);
  testing::set_launch(v, k, {});
  EXPECT_EQ(of_rule(missing_sources(v), "hint.host_calls").size(), 1u);
  ProfileView timed = with_root();
  kernel(timed, 0, "k", 1, 1e6);
  timed.set(timed.add_node(0, "cudaStreamSynchronize"), "sync_time (ns)", 10);
  EXPECT_TRUE(of_rule(missing_sources(timed), "hint.host_calls").empty());
}

TEST(MissingSources, AsksForPeaksWhenTheDeviceIsUnknown) {
  ProfileView v = with_root();
  v.set(kernel(v, 0, "k", 1, 1e6), "bytes", 1e6);
  auto hints = missing_sources(v);
  EXPECT_EQ(of_rule(hints, "hint.device_peaks").size(), 1u);
}

TEST(MissingSources, OneRankOfManyAsksForTheOthers) {
  ProfileView v = with_root();
  kernel(v, 0, "k", 1, 1e6);
  v.rank = 1;
  v.world_size = 4;
  auto hints = missing_sources(v);
  auto ranks = of_rule(hints, "hint.ranks");
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_NE(ranks[0]->seen.find("rank 1 of 4"), std::string::npos);
}

TEST(MissingSources, AnEmptyTreeSaysSo) {
  ProfileView v = with_root();
  v.add_node(0, "step");
  auto hints = missing_sources(v);
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_EQ(hints[0].rule, "hint.kernels");
}

}  // namespace
}  // namespace proton::analysis
