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

TEST(Spills, FiresFromTheCompiledKernelAndNamesItsKnobs) {
  // The compiler's count alone (no launch facts: a profile of a backend that records none).
  ProfileView v = with_root();
  int32_t k = kernel(v, v.add_node(0, "step"), "matmul", 10, 10e6);
  v.set(k, "triton_n_spills", 48);
  v.set(k, "triton_n_regs", 255);
  v.set(k, "triton_num_warps", 4);
  v.set(k, "triton_num_stages", 4);
  v.set_text(k, "triton_config", "BLOCK_M=128, BLOCK_N=256, num_warps=4, num_stages=4");
  v.set_text(k, "triton_source", "mm.py:12");
  auto found = spills(v);
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.number_of("n_spills"), 48);
  EXPECT_EQ(f.number_of("n_regs"), 255);
  EXPECT_EQ(f.number_of("time_share"), 1.0);
  EXPECT_NE(f.seen.find("spilled 48 registers"), std::string::npos) << f.seen;
  EXPECT_NE(f.suggestion.find("num_warps 4 -> 8"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.suggestion.find("num_stages 4 -> 3"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.suggestion.find("BLOCK_M=128, BLOCK_N=256"), std::string::npos) << f.suggestion;
  // Joined with the launch's own record when both are there.
  ProfileView both = launched({.grid = 100, .block = 128, .registers = 255, .local = 192});
  both.set(2, "triton_n_spills", 48);
  found = spills(both);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].number_of("local_bytes_per_thread"), 192);
  EXPECT_NE(found[0].seen.find("192 B per thread in local memory"), std::string::npos)
      << found[0].seen;
  // A math routine's small frame (7 words) is no spill.
  v.set(k, "triton_n_spills", 7);
  EXPECT_TRUE(spills(v).empty());
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
