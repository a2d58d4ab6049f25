// Step schedules, with the meaning torch.profiler's schedule has: after `skip_first` steps, each
// cycle waits `wait` steps, records `warmup` steps that are thrown away, then records `active`
// steps kept as one window; `repeat` cycles (0: forever). Pure logic: the window controller
// (control/windows.h) turns its transitions into sessions.
#pragma once

#include <cstdint>
#include <string>

namespace proton::control {

struct ScheduleSpec {
  uint64_t wait = 0;
  uint64_t warmup = 0;
  uint64_t active = 1;
  uint64_t repeat = 0;  // 0: cycles never end
  uint64_t skip_first = 0;
  // Each active window a phase of one profile (the session's phases, written as
  // triton.profiler's phase files) instead of a profile of its own.
  bool phases = false;
};

/// "" when the schedule can run, else one line saying what is wrong (active must be >= 1).
std::string check_schedule(const ScheduleSpec& spec);

enum class StepPhase : uint8_t { kIdle, kWarmup, kRecord };

/// What step `step` (0-based, skipped steps included) does, and in which cycle.
struct StepState {
  StepPhase phase = StepPhase::kIdle;
  uint64_t cycle = 0;  // meaningful for kWarmup and kRecord
};
StepState step_state(const ScheduleSpec& spec, uint64_t step);

/// What to do on entering a step, in this order: close the open window, open a new one (its
/// recorded steps are first_step..last_step), throw away the warm-up recorded so far.
struct StepActions {
  bool close = false;
  bool open = false;
  bool discard_warmup = false;
  uint64_t first_step = 0;  // with open: the window's first and last recorded (kept) step
  uint64_t last_step = 0;

  bool any() const { return close || open || discard_warmup; }
};

/// The transition into `step` from the step before it (step 0: from no step).
StepActions actions_entering(const ScheduleSpec& spec, uint64_t step);

}  // namespace proton::control
