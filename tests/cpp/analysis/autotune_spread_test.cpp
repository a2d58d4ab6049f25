#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// Two autotune configs of "matmul" under one step, each with its compiled kernel's config text
// and 1 TFLOP of declared work; the slow one takes `slow_ns`.
ProfileView two_configs(double slow_ns, bool with_configs = true) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t slow = kernel(v, step, "matmul[BLOCK_M=64]", 10, slow_ns);
  int32_t fast = kernel(v, step, "matmul[BLOCK_M=128]", 10, 4e6);
  v.set(slow, "flops16", 1e12);
  v.set(fast, "flops16", 1e12);
  if (with_configs) {
    v.set_text(slow, "triton_config", "BLOCK_M=64, num_warps=2, num_stages=2");
    v.set_text(fast, "triton_config", "BLOCK_M=128, num_warps=8, num_stages=3");
  }
  return v;
}

TEST(AutotuneSpread, NamesTheBestAndWorstConfigByTheirText) {
  ProfileView v = two_configs(10e6);
  auto found = autotune_spread(v);
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "autotune_spread");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "matmul[BLOCK_M=64]"}));
  EXPECT_DOUBLE_EQ(f.number_of("spread"), 2.5);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 6e6);
  EXPECT_EQ(f.severity, Severity::kHigh);
  auto word = [&](const char* key) {
    for (const auto& [k, val] : f.evidence) {
      if (k == key) return std::get<std::string>(val);
    }
    return std::string();
  };
  EXPECT_EQ(word("worst_config"), "BLOCK_M=64, num_warps=2, num_stages=2");
  EXPECT_EQ(word("best_config"), "BLOCK_M=128, num_warps=8, num_stages=3");
  EXPECT_EQ(word("unit"), "FLOP");
  EXPECT_NE(f.suggestion.find("BLOCK_M=64, num_warps=2"), std::string::npos) << f.suggestion;
  // variant_spread leaves configured variants to this rule: one finding, not two.
  EXPECT_TRUE(variant_spread(v).empty());
}

TEST(AutotuneSpread, ComparesPerLaunchOnlyWhenEveryVariantRanOneGrid) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t a = kernel(v, step, "k[A]", 10, 9e6);
  int32_t b = kernel(v, step, "k[B]", 10, 3e6);
  v.set_text(a, "triton_config", "BLOCK=32, num_warps=1, num_stages=1");
  v.set_text(b, "triton_config", "BLOCK=256, num_warps=4, num_stages=1");
  EXPECT_TRUE(autotune_spread(v).empty());  // no grid: launches may differ in work
  for (int32_t n : {a, b}) {
    v.set(n, "grid_x", 128);
    v.set(n, "grid_y", 1);
    v.set(n, "grid_z", 1);
  }
  auto found = autotune_spread(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame.back(), "k[A]");
  EXPECT_DOUBLE_EQ(found[0].number_of("spread"), 3.0);
  v.set(b, "grid_x", 16);  // another grid: another shape, no comparison per launch
  EXPECT_TRUE(autotune_spread(v).empty());
}

TEST(AutotuneSpread, QuietOnCloseConfigsOrWithoutConfigs) {
  EXPECT_TRUE(autotune_spread(two_configs(5e6)).empty());
  ProfileView plain = two_configs(10e6, false);
  EXPECT_TRUE(autotune_spread(plain).empty());
  EXPECT_EQ(variant_spread(plain).size(), 1u);  // the family is variant_spread's again
}

}  // namespace
}  // namespace proton::analysis
