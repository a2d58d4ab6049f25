#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::Launch;
using testing::launched;
using testing::with_root;

TEST(Spills, FiresOnLocalMemoryWithTheRegistersBeside) {
  auto found = spills(launched({.grid = 100, .block = 32, .registers = 255, .local = 1024}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "spills");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "k"}));
  EXPECT_EQ(f.number_of("local_bytes_per_thread"), 1024);
  EXPECT_EQ(f.number_of("registers_per_thread"), 255);
  EXPECT_FALSE(f.saving_ns.has_value());
  EXPECT_EQ(f.severity, Severity::kMedium);  // at most medium without an estimate
  EXPECT_NE(f.seen.find("1 KB in local memory"), std::string::npos) << f.seen;
  EXPECT_NE(f.suggestion.find("num_warps"), std::string::npos);
}

TEST(Spills, QuietWithoutLocalMemoryOrTime) {
  EXPECT_TRUE(spills(launched({.grid = 100, .block = 128, .registers = 64})).empty());
  // sin/cos keep 28 bytes there in kernels that never spill (a 32-byte frame).
  EXPECT_TRUE(spills(launched({.grid = 100, .block = 128, .registers = 32, .local = 32})).empty());
  EXPECT_TRUE(
      spills(launched({.block = 32, .registers = 255, .local = 64}, kMinKernelTimeNs / 2)).empty());
  // A device map is not needed: spills are the kernel's own.
  ProfileView v = launched({.block = 32, .registers = 255, .local = 64});
  v.devices.clear();
  EXPECT_EQ(spills(v).size(), 1u);
}

}  // namespace
}  // namespace proton::analysis
