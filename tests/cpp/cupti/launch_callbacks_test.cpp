// The launch callback, driven with hand-built CUpti_CallbackData: which calls get tagged.
#include "backends/cupti/launch_callbacks.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "attribution/launch_stage.h"
#include "common/hot.h"
#include "test_util.h"

namespace proton::cupti {
namespace {

using proton::testing::drain_tags;

void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
          uint32_t correlation) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = correlation;
  data.functionName = "test";
  on_launch_api(nullptr, domain, cbid, &data);
}

constexpr auto kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

class LaunchCallbacks : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_launch_nesting();
    drain_tags();
    LaunchStage::active_sessions = 0b101;
  }
  void TearDown() override { LaunchStage::active_sessions = 0; }
  proton::testing::MainThreadFixture main_;
};

TEST_F(LaunchCallbacks, DriverLaunchIsTaggedWithTheCurrentContext) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(proton::testing::id("triton_op"));
  ContextId ctx = ThreadContext::launch_context();
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 11);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 11);
  tc.exit_scope(proton::testing::id("triton_op"));
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0].correlation, 11u);
  EXPECT_EQ(tags[0].context, ctx);
  EXPECT_EQ(tags[0].sessions, 0b101u);
  EXPECT_EQ(tags[0].fanout, 1u);
}

TEST_F(LaunchCallbacks, DriverCallInsideARuntimeLaunchIsNotTaggedAgain) {
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 20);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 21);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 21);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 20);
  // Afterwards a plain driver launch is tagged again.
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_ENTER, 22);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_EXIT, 22);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].correlation, 20u);
  EXPECT_EQ(tags[1].correlation, 22u);
}

TEST_F(LaunchCallbacks, GraphLaunchesHaveUnknownFanout) {
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_ENTER, 30);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_ENTER, 31);  // nested
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_API_EXIT, 31);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT, 30);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, CUPTI_API_ENTER, 32);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, CUPTI_API_EXIT, 32);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].fanout, 0u);
  EXPECT_EQ(tags[1].fanout, 0u);
}

TEST_F(LaunchCallbacks, AMissedExitIsForgottenOnResume) {
  // A pause between enter and exit swallows the exit; the thread must not stay "nested".
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 40);
  reset_launch_nesting();
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 41);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 41);
  // An exit whose enter was never seen (callbacks enabled mid-call) changes nothing.
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 40);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 42);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(tags[1].correlation, 41u);
  EXPECT_EQ(tags[2].correlation, 42u);
}

TEST_F(LaunchCallbacks, WithoutKernelRecordsNoLaunchIsTaggedAndNestingStaysBalanced) {
  // Kernel records off (instrumentation sessions by default): no record would ever claim a
  // tag, so none may be held.
  hot::globals.kernel_records_off = true;
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 60);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 61);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 61);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 60);
  EXPECT_TRUE(drain_tags().empty());
  // Every exit was counted: with records back on, the next launch is outermost and tagged.
  hot::globals.kernel_records_off = false;
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 62);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 62);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0].correlation, 62u);
}

TEST_F(LaunchCallbacks, NestingIsPerThread) {
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, 50);
  std::thread other([] {
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, 51);
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, 51);
  });
  other.join();
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, 50);
  std::set<uint64_t> got;
  for (const LaunchTag& t : drain_tags())
    got.insert(t.correlation);
  EXPECT_EQ(got, (std::set<uint64_t>{50, 51}));
}

TEST(LaunchCallbackList, CoversEveryLaunchApiOnce) {
  std::set<std::pair<int, uint32_t>> seen;
  for (const LaunchCallback& c : launch_callbacks()) {
    EXPECT_TRUE(seen.insert({c.domain, c.cbid}).second) << "duplicate cbid " << c.cbid;
    EXPECT_EQ(launch_fanout(c.domain, c.cbid) == 0, c.graph);
  }
  for (auto cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch}) {
    EXPECT_TRUE(seen.count({kDrv, cbid})) << cbid;
  }
  for (auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
                    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000}) {
    EXPECT_TRUE(seen.count({kRt, cbid})) << cbid;
  }
}

// A fake CUPTI that records which (domain, cbid) pairs get enabled, and reports a version.
std::set<std::pair<int, uint32_t>> g_enabled_ids;
uint32_t g_version = 130000;
CUptiResult fake_enable(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                        CUpti_CallbackId cbid) {
  if (enable) {
    g_enabled_ids.insert({domain, cbid});
  } else {
    g_enabled_ids.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}
CUptiResult fake_version(uint32_t* version) {
  *version = g_version;
  return CUPTI_SUCCESS;
}

TEST(LaunchCallbackList, DriverOnlyEnablesEveryDriverIdAndOnlyRuntimeGraphLaunches) {
  CuptiApi api;
  api.cuptiEnableCallback = fake_enable;
  std::string error;
  g_enabled_ids.clear();
  int n = set_launch_callbacks(api, nullptr, true, error, /*driver_only=*/true);
  size_t expected = 0;
  for (const LaunchCallback& c : launch_callbacks()) {
    bool on = c.domain == kDrv || c.graph;
    expected += on ? 1 : 0;
    EXPECT_EQ(g_enabled_ids.count({c.domain, c.cbid}), on ? 1u : 0u) << c.domain << " " << c.cbid;
  }
  EXPECT_EQ(static_cast<size_t>(n), expected);
  EXPECT_FALSE(g_enabled_ids.count({kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000}));
  // Disabling (pause, stop) turns off every id, whichever set was on.
  set_launch_callbacks(api, nullptr, false, error);
  EXPECT_TRUE(g_enabled_ids.empty());
  set_launch_callbacks(api, nullptr, true, error);
  EXPECT_EQ(g_enabled_ids.size(), launch_callbacks().size());
  EXPECT_TRUE(error.empty()) << error;
}

TEST(LaunchCallbackList, AutoMeansDriverOnlyFromCupti13) {
  using Choice = BackendOptions::LaunchCallbacks;
  CuptiApi api;
  api.cuptiGetVersion = fake_version;
  g_version = 130001;
  EXPECT_TRUE(driver_launch_callbacks_only(api, Choice::kAuto));
  EXPECT_FALSE(driver_launch_callbacks_only(api, Choice::kAll));
  g_version = 120800;
  EXPECT_FALSE(driver_launch_callbacks_only(api, Choice::kAuto));
  EXPECT_TRUE(driver_launch_callbacks_only(api, Choice::kDriver));
}

}  // namespace
}  // namespace proton::cupti
