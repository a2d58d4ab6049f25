#include "control/schedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace proton::control {
namespace {

// One letter a step: '.' idle, 'w' warm-up, 'R' recorded.
std::string phases(const ScheduleSpec& spec, uint64_t steps) {
  std::string out;
  for (uint64_t s = 0; s < steps; ++s) {
    switch (step_state(spec, s).phase) {
      case StepPhase::kIdle:
        out += '.';
        break;
      case StepPhase::kWarmup:
        out += 'w';
        break;
      case StepPhase::kRecord:
        out += 'R';
        break;
    }
  }
  return out;
}

// The windows a run of `steps` steps opens, as [first,last] of the kept steps, and how many
// windows were closed by the time it ends.
struct Walk {
  std::vector<std::pair<uint64_t, uint64_t>> opened;
  int closed = 0;
  int discards = 0;
};
Walk run(const ScheduleSpec& spec, uint64_t steps) {
  Walk r;
  bool open = false;
  for (uint64_t s = 0; s < steps; ++s) {
    StepActions a = actions_entering(spec, s);
    if (a.close) {
      EXPECT_TRUE(open) << "step " << s << " closes no window";
      ++r.closed;
      open = false;
    }
    if (a.open) {
      EXPECT_FALSE(open) << "step " << s << " opens a second window";
      r.opened.emplace_back(a.first_step, a.last_step);
      open = true;
    }
    if (a.discard_warmup) {
      EXPECT_TRUE(open);
      ++r.discards;
    }
  }
  return r;
}

TEST(Schedule, TorchProfilerBoundaries) {
  // torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1): steps 0 idle, 1 warm-up,
  // 2-3 recorded, the rest idle.
  ScheduleSpec spec{.wait = 1, .warmup = 1, .active = 2, .repeat = 1};
  EXPECT_EQ(phases(spec, 8), ".wRR....");
  Walk r = run(spec, 8);
  ASSERT_EQ(r.opened.size(), 1u);
  EXPECT_EQ(r.opened[0], (std::pair<uint64_t, uint64_t>{2, 3}));
  EXPECT_EQ(r.closed, 1);  // step 4 closes it
  EXPECT_EQ(r.discards, 1);
  EXPECT_TRUE(actions_entering(spec, 1).open);            // warm-up records
  EXPECT_TRUE(actions_entering(spec, 2).discard_warmup);  // and is thrown away
  EXPECT_TRUE(actions_entering(spec, 4).close);
}

TEST(Schedule, RepeatAndSkipFirst) {
  ScheduleSpec spec{.wait = 2, .warmup = 0, .active = 1, .repeat = 3, .skip_first = 3};
  EXPECT_EQ(phases(spec, 14), ".....R..R..R..");
  Walk r = run(spec, 14);
  ASSERT_EQ(r.opened.size(), 3u);
  EXPECT_EQ(r.opened[0].first, 5u);
  EXPECT_EQ(r.opened[1].first, 8u);
  EXPECT_EQ(r.opened[2], (std::pair<uint64_t, uint64_t>{11, 11}));
  EXPECT_EQ(r.closed, 3);
  EXPECT_EQ(r.discards, 0);
}

TEST(Schedule, RepeatZeroRunsForever) {
  ScheduleSpec spec{.wait = 1, .warmup = 0, .active = 1, .repeat = 0};
  EXPECT_EQ(phases(spec, 8), ".R.R.R.R");
  EXPECT_EQ(run(spec, 1000).opened.size(), 500u);
}

TEST(Schedule, BackToBackCyclesAreSeparateWindows) {
  // wait = warmup = 0: every `active` steps one window closes and the next opens on the same step.
  ScheduleSpec spec{.wait = 0, .warmup = 0, .active = 2, .repeat = 2};
  EXPECT_EQ(phases(spec, 6), "RRRR..");
  StepActions a = actions_entering(spec, 2);
  EXPECT_TRUE(a.close);
  EXPECT_TRUE(a.open);
  EXPECT_EQ(a.first_step, 2u);
  EXPECT_EQ(a.last_step, 3u);
  Walk r = run(spec, 6);
  EXPECT_EQ(r.opened.size(), 2u);
  EXPECT_EQ(r.closed, 2);
}

TEST(Schedule, WarmupRightAfterRecordOpensANewWindow) {
  ScheduleSpec spec{.wait = 0, .warmup = 1, .active = 1, .repeat = 2};
  EXPECT_EQ(phases(spec, 5), "wRwR.");
  StepActions a = actions_entering(spec, 2);
  EXPECT_TRUE(a.close);
  EXPECT_TRUE(a.open);
  EXPECT_FALSE(a.discard_warmup);
  EXPECT_EQ(a.first_step, 3u);
}

TEST(Schedule, ActiveZeroIsRefused) {
  ScheduleSpec spec{.active = 0};
  EXPECT_NE(check_schedule(spec), "");
  EXPECT_EQ(phases(spec, 4), "....");  // and never records
  EXPECT_EQ(check_schedule(ScheduleSpec{}), "");
}

}  // namespace
}  // namespace proton::control
