#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

ProfileView two_configs(double slow_ns, const char* slow_name = "matmul[BLOCK_M=64]") {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  v.set(kernel(v, step, slow_name, 10, slow_ns), "flops16", 1e12);
  v.set(kernel(v, step, "matmul[BLOCK_M=128]", 10, 4e6), "flops16", 1e12);
  return v;
}

TEST(VariantSpread, FiresOnAVariantSlowerPerFlop) {
  auto found = variant_spread(two_configs(10e6));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "variant_spread");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "matmul[BLOCK_M=64]"}));
  EXPECT_DOUBLE_EQ(f.number_of("spread"), 2.5);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 6e6);
}

TEST(VariantSpread, QuietOnCloseVariants) {
  EXPECT_TRUE(variant_spread(two_configs(5e6)).empty());
}

TEST(VariantSpread, QuietAcrossKernelFamilies) {
  EXPECT_TRUE(variant_spread(two_configs(10e6, "softmax[BLOCK=64]")).empty());
}

}  // namespace
}  // namespace proton::analysis
