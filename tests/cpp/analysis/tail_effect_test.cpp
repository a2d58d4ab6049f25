#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::Launch;
using testing::launched;
using testing::with_root;

std::string shape(const Finding& f) {
  return std::get<std::string>(f.evidence[0].second);
}

TEST(TailEffect, FiresOnAGridSmallerThanTheGpu) {
  // 16 blocks on 132 SMs: 116 SMs idle.
  auto found = tail_effect(launched({.grid = 16, .block = 128, .registers = 32}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "tail_effect");
  EXPECT_EQ(shape(f), "small_grid");
  EXPECT_DOUBLE_EQ(f.number_of("idle_share"), 1 - 16.0 / 132);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 10e6 * (1 - 16.0 / 132));
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_NE(f.suggestion.find("split-K"), std::string::npos);
}

TEST(TailEffect, QuietOnCollectives) {
  // NCCL launches one block per channel by design; its time is waiting for other ranks.
  ProfileView v = launched({.grid = 1, .block = 512, .registers = 96});
  v.nodes[2].name = "ncclDevKernel_Broadcast_RING_LL";
  EXPECT_TRUE(tail_effect(v).empty());
  EXPECT_TRUE(occupancy(v).empty());
}

TEST(TailEffect, FiresOnAMostlyEmptyLastWave) {
  // 1,024-thread blocks: 2 per SM, 264 a wave; 330 blocks are 1.25 waves run in 2 waves' time.
  auto found = tail_effect(launched({.grid = 330, .block = 1024, .registers = 32}));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(shape(f), "partial_wave");
  EXPECT_DOUBLE_EQ(f.number_of("waves"), 1.25);
  EXPECT_DOUBLE_EQ(f.number_of("last_wave_fill"), 0.25);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 10e6 * 0.375);
  EXPECT_NE(f.suggestion.find("multiple of 264 blocks"), std::string::npos) << f.suggestion;
}

TEST(TailEffect, QuietOnFullOrManyWavesAndOnOneWaveOverEverySm) {
  Launch l{.block = 1024, .registers = 32};
  for (double grid : {264.0, 528.0, 2641.0, 132.0, 200.0}) {
    l.grid = grid;
    EXPECT_TRUE(tail_effect(launched(l)).empty()) << grid;
  }
}

TEST(TailEffect, QuietWhenTheGridVariesOrClustersPlaceTheBlocks) {
  ProfileView varies = launched({.grid = 16, .block = 128, .registers = 32});
  varies.set(2, "launch_config_varies", 1);
  EXPECT_TRUE(tail_effect(varies).empty());
  ProfileView clustered = launched({.grid = 16, .block = 128, .registers = 32});
  clustered.set(2, "cluster_x", 2);
  clustered.set(2, "cluster_y", 1);
  clustered.set(2, "cluster_z", 1);
  EXPECT_TRUE(tail_effect(clustered).empty());
  EXPECT_TRUE(tail_effect(launched({.grid = 16, .block = 128, .registers = 32}, 1e5)).empty());
}

TEST(TailEffect, QuietOnKernelsOfAFewMicroseconds) {
  // 2,000 launches of 2 us on one block: launch-bound, whatever the grid.
  ProfileView v = launched({.grid = 1, .block = 256, .registers = 16}, 4e6);
  v.set(2, "count", 2000);
  EXPECT_TRUE(tail_effect(v).empty());
  v.set(2, "count", 10);  // 400 us a launch: the grid is what idles the GPU
  EXPECT_EQ(tail_effect(v).size(), 1u);
}

}  // namespace
}  // namespace proton::analysis
