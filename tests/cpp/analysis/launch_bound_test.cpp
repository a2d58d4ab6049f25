#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// root > step > 3 elementwise kernels, 1,000 launches each at 2 us.
ProfileView tiny_kernels_in_step() {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  for (const char* name : {"add", "mul", "relu"})
    kernel(v, step, name, 1000, 1000 * 2'000.0);
  return v;
}

TEST(LaunchBound, FiresOnManyShortKernelsInAScope) {
  auto found = launch_bound(tiny_kernels_in_step());
  // The root holds the same launches: only the scope that explains them is reported.
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "launch_bound");
  EXPECT_EQ(f.frame, std::vector<std::string>{"step"});
  EXPECT_DOUBLE_EQ(f.number_of("launches"), 3000);
  EXPECT_DOUBLE_EQ(f.number_of("avg_kernel_ns"), 2000);
  // 3,000 launches x (4 us assumed launch cost - 2 us of kernel).
  ASSERT_TRUE(f.saving_ns);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 3000 * (kLaunchCostNs - 2000));
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_NE(f.suggestion.find("CUDA graph"), std::string::npos);
}

TEST(LaunchBound, QuietOnTheSameKernelsReplayedFromACudaGraph) {
  // step > <captured_at> > capture > kernels: one graph launch per replay, not 3,000 launches.
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t capture = v.add_node(v.add_node(step, "<captured_at>"), "capture");
  for (const char* name : {"add", "mul", "relu"})
    kernel(v, capture, name, 1000, 1000 * 2'000.0);
  EXPECT_TRUE(launch_bound(v).empty());
}

TEST(LaunchBound, QuietOnLongKernels) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  kernel(v, step, "gemm", 1000, 1000 * 500'000.0);
  EXPECT_TRUE(launch_bound(v).empty());
}

TEST(LaunchBound, QuietOnFewLaunches) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  kernel(v, step, "add", kMinLaunches - 1, (kMinLaunches - 1) * 1'000.0);
  EXPECT_TRUE(launch_bound(v).empty());
}

TEST(LaunchBound, MeasuresTheGpuBusyShareFromCpuTime) {
  ProfileView v = tiny_kernels_in_step();
  v.set(1, "cpu_time (ns)", 20e6);  // 6 ms of kernels in 20 ms of the step
  auto found = launch_bound(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].number_of("gpu_busy_share"), 0.3);
  EXPECT_DOUBLE_EQ(*found[0].saving_ns, 14e6);
}

TEST(LaunchBound, EnclosingScopesTakeTheMeasuredIdleTime) {
  // 3,000 launches of 1 us kernels: an estimate gives 9 ms idle (4 us a launch); the step's CPU
  // time measured 4 ms. The root, with a few warm-up launches besides, is not reported over
  // the step on the strength of the estimate.
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  kernel(v, step, "add", 3000, 3000 * 1'000.0);
  v.set(step, "cpu_time (ns)", 7e6);
  kernel(v, 0, "warmup", 30, 30 * 1'000.0);
  auto found = launch_bound(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, std::vector<std::string>{"step"});
  EXPECT_DOUBLE_EQ(*found[0].saving_ns, 4e6);
}

TEST(LaunchBound, QuietWhenCpuTimeShowsTheGpuBusy) {
  ProfileView v = tiny_kernels_in_step();
  v.set(1, "cpu_time (ns)", 7e6);  // launches ran ahead: 6 ms of kernels in 7 ms
  EXPECT_TRUE(launch_bound(v).empty());
}

TEST(LaunchBound, NamesTheScopeWithTheShortKernels) {
  ProfileView v = with_root();
  int32_t fwd = v.add_node(0, "forward");
  int32_t bwd = v.add_node(0, "backward");
  kernel(v, fwd, "add", 5000, 5000 * 1'500.0);
  kernel(v, bwd, "gemm", 10, 10 * 2e6);
  auto found = launch_bound(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, std::vector<std::string>{"forward"});
}

}  // namespace
}  // namespace proton::analysis
