// The benchmark floor must leave CUPTI as it found it, started or refused: each bench process
// runs one variant, but a floor that kept its claim or subscriber would lock the profiler out.
#include "backends/cupti/cupti_floor.h"

#include <gtest/gtest.h>

#include <string>

#include "backends/cupti/cupti_api.h"

namespace proton {
namespace {

// Without a driver (CI) start fails with a reason; with one it runs until stopped. Either way
// the activity claim is free afterwards.
void start_then_stop(FloorCallbacks callbacks) {
  std::string why;
  bool started = cupti_floor_start(why, {}, callbacks);
  if (started) {
    EXPECT_TRUE(cupti_floor_start(why, {}, callbacks)) << "a repeated start is a no-op";
    FloorCallbacks other =
        callbacks == FloorCallbacks::kNone ? FloorCallbacks::kLaunch : FloorCallbacks::kNone;
    EXPECT_FALSE(cupti_floor_start(why, {}, other)) << "other callbacks need a stop first";
    EXPECT_NE(why.find("already running"), std::string::npos) << why;
  } else {
    EXPECT_FALSE(why.empty());
  }
  cupti_floor_stop();
  cupti_floor_stop();  // a second stop is a no-op
  std::string claim_error;
  EXPECT_TRUE(cupti::claim_activity("profiler", claim_error)) << claim_error;
  cupti::release_activity("profiler");
}

TEST(CuptiFloor, ActivityOnlyReleasesCupti) {
  start_then_stop(FloorCallbacks::kNone);
}

TEST(CuptiFloor, WithLaunchCallbacksReleasesCupti) {
  start_then_stop(FloorCallbacks::kLaunch);
}

}  // namespace
}  // namespace proton
