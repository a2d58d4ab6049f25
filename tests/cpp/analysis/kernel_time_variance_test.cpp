#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// ROOT > step > k: 100 launches totalling `time_ns`, the shortest and longest as given.
ProfileView launches(double time_ns, double min_ns, double max_ns, double count = 100) {
  ProfileView v = with_root();
  int32_t k = kernel(v, v.add_node(0, "step"), "k", count, time_ns);
  v.set(k, "time_min (ns)", min_ns);
  v.set(k, "time_max (ns)", max_ns);
  return v;
}

TEST(KernelTimeVariance, FiresWhenTheMeanLaunchIsFarAboveTheFastest) {
  // 100 launches, 20 ms in all: mean 200 us, fastest 50 us, slowest 900 us.
  auto found = kernel_time_variance(launches(20e6, 50e3, 900e3));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "kernel_time_variance");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "k"}));
  EXPECT_DOUBLE_EQ(f.number_of("mean_over_min"), 4.0);
  EXPECT_DOUBLE_EQ(f.number_of("max_over_min"), 18.0);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 15e6);  // 20 ms - 100 x 50 us
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_NE(f.suggestion.find("contention"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.suggestion.find("clocks"), std::string::npos) << f.suggestion;
}

TEST(KernelTimeVariance, QuietOnCollectives) {
  // A collective's launches take as long as the slowest rank makes them wait.
  ProfileView v = launches(20e6, 50e3, 900e3);
  v.nodes[2].name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  EXPECT_TRUE(kernel_time_variance(v).empty());
}

TEST(KernelTimeVariance, SeveralShapesPointAtDataDependentShapes) {
  ProfileView v = launches(20e6, 50e3, 900e3);
  v.set(2, "launch_config_varies", 1);
  auto found = kernel_time_variance(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].suggestion.find("data"), std::string::npos);
  EXPECT_NE(found[0].seen.find("more than one grid"), std::string::npos);
  // Several sizes: the fastest launch's pace claims nothing (a larger input takes longer).
  EXPECT_FALSE(found[0].saving_ns.has_value());
  EXPECT_EQ(found[0].severity, Severity::kLow);
}

TEST(KernelTimeVariance, QuietOnEvenLaunchesAndOnOneColdLaunch) {
  // Even: mean 200 us, fastest 180 us.
  EXPECT_TRUE(kernel_time_variance(launches(20e6, 180e3, 260e3)).empty());
  // One cold first launch of 5 ms among 99 of ~150 us: the maximum moves, the mean hardly.
  EXPECT_TRUE(kernel_time_variance(launches(99 * 150e3 + 5e6, 140e3, 5e6)).empty());
  // Too few launches to say.
  EXPECT_TRUE(kernel_time_variance(launches(20e6, 50e3, 900e3, 10)).empty());
  // A profile without the spread (an older file).
  ProfileView old = with_root();
  kernel(old, old.add_node(0, "step"), "k", 100, 20e6);
  EXPECT_TRUE(kernel_time_variance(old).empty());
}

}  // namespace
}  // namespace proton::analysis
