#include <gtest/gtest.h>

#include "analysis/launch_model.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::Launch;
using testing::launched;
using testing::with_root;

std::string word(const Finding& f, const char* key) {
  for (const auto& [k, v] : f.evidence) {
    if (k == key) return std::get<std::string>(v);
  }
  return "";
}

TEST(LaunchModel, MatchesTheOccupancyCalculatorOnAnH100) {
  ViewDevice d = testing::h100();
  LaunchShape s;
  // 256 threads, 255 registers: 8,192 registers a warp, 2 warps per sub-partition, 8 per SM.
  s.threads_per_block = 256;
  s.registers_per_thread = 255;
  auto o = theoretical_occupancy(d, s);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->blocks_per_sm, 1);
  EXPECT_EQ(o->limiter, Limiter::kRegisters);
  EXPECT_DOUBLE_EQ(o->share, 8.0 / 64);
  EXPECT_EQ(registers_for_blocks(d, s, 2), 128);  // 4 warps a sub-partition: 4,096 a warp
  // 128 threads, 32 registers, no shared memory: 16 blocks by registers and by warps.
  s.threads_per_block = 128;
  s.registers_per_thread = 32;
  o = theoretical_occupancy(d, s);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->blocks_per_sm, 16);
  EXPECT_DOUBLE_EQ(o->share, 1.0);
  // The driver's 1 KB per block counts: 228 KB / (112 KB + 1 KB) = 2 blocks, not more.
  s.shared_bytes_per_block = 112 * 1024;
  o = theoretical_occupancy(d, s);
  EXPECT_EQ(o->by(Limiter::kSharedMemory), 2);
  EXPECT_EQ(shared_bytes_for_blocks(d, 3), 77824 - 1024);  // 233472 / 3, in units of 128
  // Without the device's limits, or on a device older than 7.0, there is no answer.
  EXPECT_FALSE(theoretical_occupancy(ViewDevice{}, s));
  d.arch = "61";
  EXPECT_FALSE(theoretical_occupancy(d, s));
}

TEST(Occupancy, FiresOnLargeSharedMemoryNamingItAndTheBudgetForAnotherBlock) {
  // 1,024 threads with 150,000 bytes of shared memory: one block (32 of 64 warps) per SM;
  // registers (32 a thread) and the block size would allow two.
  auto found =
      occupancy(launched({.grid = 1000, .block = 1024, .registers = 32, .shared = 150000}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "occupancy");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "k"}));
  EXPECT_DOUBLE_EQ(f.number_of("occupancy"), 0.5);
  EXPECT_EQ(word(f, "limiter"), "shared_memory");
  EXPECT_EQ(word(f, "binding"), "shared_memory");
  EXPECT_EQ(f.number_of("blocks_by_registers"), 2);
  EXPECT_EQ(f.number_of("blocks_by_block_size"), 2);
  EXPECT_FALSE(f.saving_ns.has_value());
  EXPECT_EQ(f.severity, Severity::kLow);  // half the warps: noted, not pressed
  EXPECT_NE(f.seen.find("limited by shared memory"), std::string::npos) << f.seen;
  // Two blocks fit at 233,472 / 2 rounded down to 128 bytes, less the 1 KB the driver keeps.
  EXPECT_NE(f.suggestion.find("at most 113 KB of shared memory per block"), std::string::npos)
      << f.suggestion;
  EXPECT_NE(f.suggestion.find("num_stages"), std::string::npos);
}

TEST(Occupancy, FiresOnRegisterHungryKernelsWithTheRegisterBudget) {
  auto found = occupancy(launched({.grid = 1000, .block = 256, .registers = 255}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_DOUBLE_EQ(f.number_of("occupancy"), 0.125);
  EXPECT_EQ(word(f, "limiter"), "registers");
  EXPECT_EQ(f.severity, Severity::kMedium);  // an eighth of the warps, all of the kernel time
  EXPECT_NE(f.suggestion.find("at most 128 registers per thread (now 255)"), std::string::npos)
      << f.suggestion;
}

TEST(Occupancy, NamesEveryBindingLimitWhenTheyTie) {
  // 40 registers a thread at 1,024 threads also allow one block only.
  auto found =
      occupancy(launched({.grid = 1000, .block = 1024, .registers = 40, .shared = 150000}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(word(found[0], "limiter"), "shared_memory");
  EXPECT_EQ(word(found[0], "binding"), "shared_memory,registers");
  EXPECT_NE(found[0].suggestion.find("registers per thread"), std::string::npos);
}

TEST(Occupancy, TinyBlocksAreLimitedByTheBlocksAnSmHolds) {
  auto found = occupancy(launched({.grid = 10000, .block = 32, .registers = 16}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(word(found[0], "limiter"), "blocks_per_sm");
  EXPECT_NE(found[0].suggestion.find("at least 64 threads"), std::string::npos);
}

TEST(Occupancy, QuietOnAFullSm) {
  EXPECT_TRUE(occupancy(launched({.grid = 1000, .block = 128, .registers = 32})).empty());
  // 768 threads: two blocks, 48 of 64 warps (75%), limited by the block size only.
  EXPECT_TRUE(occupancy(launched({.grid = 1000, .block = 768, .registers = 32})).empty());
}

TEST(Occupancy, QuietOnShortKernelsAndWithoutLimitsOrFacts) {
  Launch heavy{.grid = 1000, .block = 256, .registers = 255};
  EXPECT_TRUE(occupancy(launched(heavy, kMinKernelTimeNs / 2)).empty());
  ProfileView no_limits = launched(heavy);
  no_limits.devices[0].max_warps_per_sm = 0;  // an older file's device map
  EXPECT_TRUE(occupancy(no_limits).empty());
  ProfileView no_facts = with_root();
  no_facts.devices.push_back(testing::h100());
  kernel(no_facts, 0, "k", 1, 10e6);
  EXPECT_TRUE(occupancy(no_facts).empty());
}

TEST(Occupancy, QuietOnAKernelWithASmallShareOfTheTime) {
  ProfileView v = launched({.grid = 1000, .block = 256, .registers = 255}, 2e6);
  kernel(v, 0, "big", 1, 1e9);  // 2 ms of 1 s: under kSignificantKernelShare
  EXPECT_TRUE(occupancy(v).empty());
}

}  // namespace
}  // namespace proton::analysis
