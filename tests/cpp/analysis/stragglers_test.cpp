#include <gtest/gtest.h>

#include <cmath>

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

// A merge of two DDP ranks: step > forward, step > backward > {gemm, the all-reduce kernel}.
// Rank 1's forward takes `slow_forward` ms, rank 0's 25 ms; rank 0 then waits that much longer
// inside the all-reduce (10 ms of transfer), so both steps take the same time.
ProfileView ddp(double slow_forward) {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t forward = v.add_node(step, "forward");
  int32_t backward = v.add_node(step, "backward");
  int32_t gemm = testing::kernel(v, backward, "gemm", 20, 20e6);
  int32_t reduce = testing::kernel(v, backward, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, 0);
  double wait = slow_forward - 25;
  double step_ms = slow_forward + 10 + 10;
  stats(v, 0, step_ms * 1e6, 1.0, 0);
  stats(v, step, step_ms * 1e6, 1.0, 0);
  stats(v, forward, slow_forward * 1e6, slow_forward / ((slow_forward + 25) / 2), 1);
  stats(v, gemm, 10e6, 1.0, 0);
  double backward_max = 10 + 10 + wait;
  stats(v, backward, backward_max * 1e6, backward_max / ((backward_max + 20) / 2), 0);
  stats(v, reduce, (10 + wait) * 1e6, (10 + wait) / (10 + wait / 2), 0);
  return v;
}

TEST(Stragglers, TheRankThatWaitsInACollectiveIsNotTheStraggler) {
  // Rank 0 has 20 ms more in the all-reduce and in backward around it: it waited there for
  // rank 1, whose forward is 20 ms longer. Only forward is a finding, naming rank 1.
  auto found = stragglers(ddp(45));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, (std::vector<std::string>{"step", "forward"}));
  EXPECT_DOUBLE_EQ(found[0].number_of("slowest_rank"), 1);
  EXPECT_DOUBLE_EQ(*found[0].saving_ns, 10e6);
  EXPECT_TRUE(std::isnan(found[0].number_of("collective_mean_ns")));
}

TEST(Stragglers, ACollectiveAloneImbalancedIsQuiet) {
  // Same compute on both ranks; one arrives late at the all-reduce (launch jitter): the waiting
  // is not a straggler's mark.
  ProfileView v = ddp(25);
  int32_t backward = 3;
  int32_t reduce = 5;
  ASSERT_EQ(v.nodes[static_cast<size_t>(reduce)].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  stats(v, reduce, 30e6, 1.5, 0);
  stats(v, backward, 40e6, 40.0 / 30.0, 0);
  EXPECT_TRUE(stragglers(v).empty());
}

TEST(Stragglers, AFrameHoldingCollectivesIsJudgedOnItsTimeOutsideThem) {
  // backward: rank 1 computes 30 ms more beside a balanced all-reduce: still a straggler,
  // with the collective's mean in the evidence.
  ProfileView v = ddp(25);
  int32_t backward = 3;
  int32_t reduce = 5;
  stats(v, reduce, 10e6, 1.0, 0);
  stats(v, backward, 50e6, 50.0 / 35.0, 1);  // 20 + 30 + 10 ms against 20 ms on rank 0
  auto found = stragglers(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].frame, (std::vector<std::string>{"step", "backward"}));
  EXPECT_DOUBLE_EQ(found[0].number_of("slowest_rank"), 1);
  EXPECT_DOUBLE_EQ(found[0].number_of("max_ns"), 40e6);   // 50 - the collective's 10
  EXPECT_DOUBLE_EQ(found[0].number_of("mean_ns"), 25e6);  // 35 - 10
  EXPECT_DOUBLE_EQ(found[0].number_of("collective_mean_ns"), 10e6);
  EXPECT_NE(found[0].seen.find("outside collectives"), std::string::npos);
}

TEST(Stragglers, TheWaitingRanksSlowerComputeIsAConsequence) {
  // As on two H100s: rank 0 waits 20 ms longer in the all-reduce for rank 1, and its backward
  // GEMMs, running beside NCCL's spinning kernel, take 13 ms against rank 1's 10 ms. Forward
  // names rank 1 (the cause); the GEMM's finding stays, low, claiming nothing.
  ProfileView v = ddp(45);
  int32_t backward = 3;
  int32_t gemm = 4;
  stats(v, gemm, 13e6, 13.0 / 11.5, 0);
  stats(v, backward, 43e6, 43.0 / 31.5, 0);  // 13 + 30 against 10 + 10
  auto found = stragglers(v);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].frame, (std::vector<std::string>{"step", "forward"}));
  EXPECT_DOUBLE_EQ(found[0].number_of("slowest_rank"), 1);
  EXPECT_EQ(found[0].severity, Severity::kHigh);
  const Finding& consequence = found[1];
  EXPECT_EQ(consequence.frame, (std::vector<std::string>{"step", "backward", "gemm"}));
  EXPECT_DOUBLE_EQ(consequence.number_of("slowest_rank"), 0);
  EXPECT_EQ(consequence.severity, Severity::kLow);
  EXPECT_FALSE(consequence.saving_ns.has_value());
  EXPECT_DOUBLE_EQ(consequence.number_of("collective_wait_excess_ns"), 10e6);
  EXPECT_NE(consequence.why.find("consequence"), std::string::npos);
  // The same GEMMs slower on rank 1, the rank that did not wait: a straggler of its own.
  stats(v, gemm, 13e6, 13.0 / 11.5, 1);
  auto again = stragglers(v);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[1].frame, (std::vector<std::string>{"step", "backward", "gemm"}));
  EXPECT_TRUE(again[1].saving_ns.has_value());
  EXPECT_EQ(again[1].severity, Severity::kMedium);
}

TEST(Stragglers, QuietOnOneRank) {
  ProfileView v = with_root();
  testing::kernel(v, 0, "k", 1, 1e6);
  EXPECT_TRUE(stragglers(v).empty());
}

}  // namespace
}  // namespace proton::analysis
