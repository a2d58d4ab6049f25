#include <gtest/gtest.h>

#include "analysis/advise.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::of_rule;
using testing::with_root;

// A host-call frame as Proton writes it under `caller`.
int32_t sync_node(ProfileView& v, int32_t caller, const char* name, double calls, double ns) {
  int32_t n = v.add_node(caller, name);
  v.set(n, "sync_time (ns)", ns);
  v.set(n, "sync_calls", calls);
  return n;
}
int32_t copy_node(ProfileView& v, int32_t caller, const char* name, double calls, double ns,
                  double bytes) {
  int32_t n = v.add_node(caller, name);
  v.set(n, "memcpy_time (ns)", ns);
  v.set(n, "memcpy_calls", calls);
  v.set(n, "memcpy_bytes", bytes);
  return n;
}

// ROOT > step > train.py:12@loss_value: 1,000 launches of a 1 ms kernel and 1,000 .item() waits.
ProfileView item_in_loop() {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  int32_t frame = v.add_node(step, "train.py:12@loss_value");
  kernel(v, frame, "reduce", 1000, 1000 * 1e6);
  sync_node(v, frame, "cudaStreamSynchronize", 1000, 1000 * 900e3);
  return v;
}

TEST(HostSync, FiresOnTheFrameThatWaitsForTheGpu) {
  ProfileView v = item_in_loop();
  auto found = host_sync(v);
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "host_sync");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "train.py:12@loss_value"}));
  EXPECT_DOUBLE_EQ(f.number_of("calls"), 1000);
  EXPECT_DOUBLE_EQ(f.number_of("blocked_ns"), 900e6);
  EXPECT_DOUBLE_EQ(f.number_of("avg_blocked_ns"), 900e3);
  // Without CPU time: the share of the frame's GPU time.
  EXPECT_DOUBLE_EQ(f.number_of("scope_kernel_time_ns"), 1e9);
  EXPECT_DOUBLE_EQ(f.number_of("blocked_share"), 0.9);
  // The GPU restarts after each wait: one launch's host cost per call.
  ASSERT_TRUE(f.saving_ns);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 1000 * kLaunchCostNs);
  EXPECT_NE(f.suggestion.find(".item()"), std::string::npos);
  EXPECT_NE(f.seen.find("cudaStreamSynchronize"), std::string::npos);
}

TEST(HostSync, MeasuresTheShareAgainstTheNearestCpuTimedScope) {
  ProfileView v = item_in_loop();
  v.set(1, "cpu_time (ns)", 2e9);  // step
  auto found = host_sync(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(std::get<std::string>(found[0].evidence[3].second), "cudaStreamSynchronize");
  EXPECT_DOUBLE_EQ(found[0].number_of("scope_cpu_time_ns"), 2e9);
  EXPECT_DOUBLE_EQ(found[0].number_of("blocked_share"), 0.45);
  EXPECT_NE(found[0].seen.find("'step'"), std::string::npos);
}

TEST(HostSync, SmallReadsBackAreWaitsLargeCopiesAreNot) {
  // 4-byte pageable reads (.item() into pageable memory): the copy is the wait.
  ProfileView v = with_root();
  int32_t frame = v.add_node(0, "loop");
  copy_node(v, frame, "memcpy DtoH (pageable)", 200, 200 * 50e3, 200 * 4);
  copy_node(v, frame, "memcpy HtoD (pageable)", 200, 200 * 50e3, 200 * 4);  // sync_copy's
  auto found = host_sync(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].number_of("calls"), 200);
  // 1 MB a call is a transfer: sync_copy's, not a wait.
  ProfileView big = with_root();
  copy_node(big, big.add_node(0, "loop"), "memcpy DtoH (pageable)", 200, 200 * 50e3,
            200 * 1048576.0);
  EXPECT_TRUE(host_sync(big).empty());
}

TEST(HostSync, KindsUnderOneFrameAreOneFinding) {
  ProfileView v = with_root();
  int32_t frame = v.add_node(0, "loop");
  sync_node(v, frame, "cudaStreamSynchronize", 10, 10 * 1e3);
  sync_node(v, frame, "cudaDeviceSynchronize", 10, 10 * 100e3);
  auto found = host_sync(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].number_of("calls"), 20);
  // The saving never exceeds the time each kind of call blocked the host.
  EXPECT_DOUBLE_EQ(*found[0].saving_ns, 10 * 1e3 + 10 * kLaunchCostNs);
}

TEST(HostSync, QuietOnAFewWaits) {
  // One synchronize at the end of a run, or a few in setup: not a loop.
  ProfileView v = with_root();
  kernel(v, 0, "k", 1000, 1e9);
  sync_node(v, 0, "cudaDeviceSynchronize", kMinHostCalls - 1, 5e8);
  EXPECT_TRUE(host_sync(v).empty());
}

TEST(HostSync, QuietWithoutHostCalls) {
  ProfileView v = with_root();
  kernel(v, v.add_node(0, "step"), "k", 1000, 1e9);
  v.add_node(1, "cudaStreamSynchronize");  // a frame of that name without the metrics
  EXPECT_TRUE(host_sync(v).empty());
}

TEST(HostSync, IsTheTopAnswerForItsFrame) {
  auto all = advise(item_in_loop());
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].rule, "host_sync");
  EXPECT_TRUE(of_rule(all, "sync_copy").empty());
}

}  // namespace
}  // namespace proton::analysis
