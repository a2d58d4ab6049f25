#include <gtest/gtest.h>

#include "analysis/rank_stats.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::with_root;

void stats(ProfileView& v, int32_t node, double max, double imbalance, double rank) {
  v.set(node, "time:max (ns) (exc)", max);
  v.set(node, "time:mean (ns) (exc)", max / imbalance);
  v.set(node, "time:imbalance (exc)", imbalance);
  v.set(node, "time:argmax (pty)", rank);
  v.set(node, "ranks (exc)", 4);
}

// A merge of four ranks: root > step > all_reduce, rank 3 slow in all_reduce.
ProfileView merged(double step_imbalance, double reduce_imbalance) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t reduce = v.add_node(step, "all_reduce");
  stats(v, 0, 100e6, 1.0, 0);
  stats(v, step, 80e6, step_imbalance, 3);
  stats(v, reduce, 30e6, reduce_imbalance, 3);
  return v;
}

TEST(RankStats, NamesTheMergeColumns) {
  EXPECT_EQ(rank_stat_metric("time (ns)", "max"), "time:max (ns) (exc)");
  EXPECT_EQ(rank_stat_metric("time (ns)", "argmax"), "time:argmax (pty)");
  EXPECT_EQ(rank_stat_metric(" time (ns) ", "imbalance"), "time:imbalance (exc)");
  EXPECT_EQ(rank_stat_metric("count", "mean"), "count:mean (exc)");
}

TEST(Stragglers, NamesTheFrameAndTheSlowRank) {
  // step's excess (80 - 80/1.15 = 10.4 ms) is mostly all_reduce's (30 - 20 = 10 ms).
  auto found = stragglers(merged(1.15, 1.5));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "straggler");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "all_reduce"}));
  EXPECT_DOUBLE_EQ(f.number_of("slowest_rank"), 3);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 10e6);
  EXPECT_EQ(f.severity, Severity::kHigh);  // 10 ms of a 100 ms run
}

TEST(Stragglers, QuietOnBalancedRanks) {
  EXPECT_TRUE(stragglers(merged(1.02, 1.05)).empty());
}

TEST(Stragglers, QuietOnOneRank) {
  ProfileView v = with_root();
  testing::kernel(v, 0, "k", 1, 1e6);
  EXPECT_TRUE(stragglers(v).empty());
}

}  // namespace
}  // namespace proton::analysis
