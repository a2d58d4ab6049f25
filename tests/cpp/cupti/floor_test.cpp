// The benchmark floor must leave CUPTI as it found it, started or refused: each bench process
// runs one variant, but a floor that kept its claim or subscriber would lock the profiler out.
#include "cupti_floor.h"

#include <gtest/gtest.h>

#include <string>

#include "backends/cupti/cupti_api.h"

namespace proton {
namespace {

// Without a driver (CI) start fails with a reason; with one it runs until stopped. Either way
// the activity claim is free afterwards.
void start_then_stop(FloorConfig config) {
  std::string why;
  bool started = cupti_floor_start(why, {}, config);
  if (started) {
    EXPECT_TRUE(cupti_floor_start(why, {}, config)) << "a repeated start is a no-op";
    FloorConfig other = config;
    other.count = !other.count;
    EXPECT_FALSE(cupti_floor_start(why, {}, other)) << "another configuration needs a stop first";
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
  start_then_stop({});
}

TEST(CuptiFloor, WithLaunchCallbacksReleasesCupti) {
  start_then_stop({.callbacks = LaunchSet::kAll});
  start_then_stop({.callbacks = LaunchSet::kDriver, .count = true});
}

TEST(CuptiFloor, WithApiRecordsReleasesCupti) {
  start_then_stop({.api_records = LaunchSet::kRuntime, .external = true});
}

TEST(CuptiFloor, CountsStartAtZero) {
  std::string why;
  if (!cupti_floor_start(why, {}, {.callbacks = LaunchSet::kAll, .count = true})) {
    GTEST_SKIP() << why;
  }
  FloorCounts c = cupti_floor_counts();
  EXPECT_EQ(c.runtime_callbacks + c.driver_callbacks, 0u);
  cupti_floor_stop();
}

}  // namespace
}  // namespace proton
