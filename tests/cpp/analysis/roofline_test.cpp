#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

ProfileView one_kernel(double time_ns, double flops16, double bytes) {
  ProfileView v = with_root();
  v.devices.push_back(testing::h100());
  int32_t k = kernel(v, v.add_node(0, "step"), "k", 10, time_ns);
  if (flops16 > 0) v.set(k, "flops16", flops16);
  if (bytes > 0) v.set(k, "bytes", bytes);
  return v;
}

TEST(Roofline, FiresOnAMemoryBoundKernelFarBelowPeakBandwidth) {
  // 3 GB at 3 TB/s is 1 ms; it took 10 ms.
  auto found = roofline(one_kernel(10e6, 1e9, 3e9));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "roofline");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "k"}));
  EXPECT_EQ(std::get<std::string>(f.evidence[0].second), "memory");
  EXPECT_DOUBLE_EQ(f.number_of("share_of_peak"), 0.1);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 10e6 - 1e6 / kAttainableShare);
  EXPECT_NE(f.suggestion.find("fuse"), std::string::npos);
}

TEST(Roofline, FiresOnAComputeBoundKernelFarBelowPeakFlops) {
  // 1 TFLOP at 1 PFLOP/s is 1 ms; the bytes take microseconds.
  auto found = roofline(one_kernel(10e6, 1e12, 1e6));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(std::get<std::string>(found[0].evidence[0].second), "compute");
  EXPECT_DOUBLE_EQ(found[0].number_of("flops_per_byte"), 1e6);
}

TEST(Roofline, QuietNearPeak) {
  // 30 GB is 10 ms at peak; 12 ms is 83% of it.
  EXPECT_TRUE(roofline(one_kernel(12e6, 0, 3e10)).empty());
}

TEST(Roofline, QuietWithoutDeclaredWorkOrDevice) {
  EXPECT_TRUE(roofline(one_kernel(10e6, 0, 0)).empty());
  ProfileView v = one_kernel(10e6, 0, 3e9);
  v.devices.clear();
  EXPECT_TRUE(roofline(v).empty());
}

TEST(Roofline, QuietOnShortKernels) {
  EXPECT_TRUE(roofline(one_kernel(kMinKernelTimeNs / 2, 0, 3e5)).empty());
}

}  // namespace
}  // namespace proton::analysis
