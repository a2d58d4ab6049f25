#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// ROOT > k (kernel) > {mainloop, epilogue}: regions with their cycles and per-warp spread.
struct Region {
  const char* name;
  double cycles;
  double mean_warp;
  double max_warp;
};
ProfileView regions(std::initializer_list<Region> rs) {
  ProfileView v = with_root();
  int32_t k = kernel(v, 0, "ws_gemm", 10, 5e6);
  for (const Region& r : rs) {
    int32_t n = v.add_node(k, r.name);
    v.set(n, "cycles", r.cycles);
    v.set(n, "mean_warp_cycles", r.mean_warp);
    v.set(n, "max_warp_cycles", r.max_warp);
  }
  return v;
}

TEST(RegionImbalance, FiresOnARegionWhoseSlowestWarpIsFarAboveTheMean) {
  auto found =
      region_imbalance(regions({{"mainloop", 9e6, 1e5, 3e5}, {"epilogue", 1e6, 2e4, 2.2e4}}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "region_imbalance");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"ws_gemm", "mainloop"}));
  EXPECT_DOUBLE_EQ(f.number_of("imbalance"), 3.0);
  EXPECT_DOUBLE_EQ(f.number_of("region_cycle_share"), 0.9);
  EXPECT_EQ(f.severity, Severity::kMedium);
  EXPECT_FALSE(f.saving_ns.has_value());
  EXPECT_NE(f.seen.find("3.00x"), std::string::npos) << f.seen;
  EXPECT_NE(f.suggestion.find("warp-specialized"), std::string::npos);
}

TEST(RegionImbalance, AKernelFrameWithoutKernelTimeStillHoldsItsRegions) {
  // An instrumentation session without kernel records: the kernel's frame has no device, its
  // regions do (the device their cycles came from), and a nested region sits in its parent.
  ProfileView v = with_root();
  int32_t k = v.add_node(0, "ws_gemm");
  v.set(k, "cycles", 0);  // a reader's 0 for a column the frame lacks
  int32_t loop = v.add_kernel(k, "mainloop", "0", "1");
  v.set(loop, "cycles", 9e6);
  v.set(loop, "mean_warp_cycles", 1e5);
  v.set(loop, "max_warp_cycles", 1.1e5);
  int32_t wait = v.add_kernel(loop, "wait", "0", "1");
  v.set(wait, "cycles", 3e6);
  v.set(wait, "mean_warp_cycles", 2e4);
  v.set(wait, "max_warp_cycles", 8e4);
  auto found = region_imbalance(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, (std::vector<std::string>{"ws_gemm", "mainloop", "wait"}));
  EXPECT_DOUBLE_EQ(found[0].number_of("region_cycle_share"), 1.0 / 3);
  EXPECT_DOUBLE_EQ(found[0].number_of("imbalance"), 4.0);
}

TEST(RegionImbalance, QuietOnBalancedOrSmallRegionsOrWithoutTheSpread) {
  EXPECT_TRUE(region_imbalance(regions({{"mainloop", 9e6, 1e5, 1.2e5}})).empty());
  // Imbalanced, but 2% of the kernel's region cycles.
  EXPECT_TRUE(region_imbalance(regions({{"mainloop", 9.8e6, 1e5, 1.1e5}, {"tiny", 2e5, 1e3, 5e3}}))
                  .empty());
  ProfileView old = with_root();
  int32_t k = kernel(old, 0, "k", 1, 1e6);
  old.set(old.add_node(k, "r"), "cycles", 100);
  EXPECT_TRUE(region_imbalance(old).empty());
}

}  // namespace
}  // namespace proton::analysis
