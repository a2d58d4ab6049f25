#include "control/schedule.h"

namespace proton::control {

std::string check_schedule(const ScheduleSpec& spec) {
  if (spec.active == 0) return "active must be at least 1 (a window records at least one step)";
  return "";
}

StepState step_state(const ScheduleSpec& spec, uint64_t step) {
  if (spec.active == 0 || step < spec.skip_first) return {};
  const uint64_t s = step - spec.skip_first;
  const uint64_t cycle_len = spec.wait + spec.warmup + spec.active;
  const uint64_t cycle = s / cycle_len;
  if (spec.repeat != 0 && cycle >= spec.repeat) return {};
  const uint64_t at = s % cycle_len;
  if (at < spec.wait) return {};
  if (at < spec.wait + spec.warmup) return {StepPhase::kWarmup, cycle};
  return {StepPhase::kRecord, cycle};
}

StepActions actions_entering(const ScheduleSpec& spec, uint64_t step) {
  const StepState now = step_state(spec, step);
  const StepState before = step == 0 ? StepState{} : step_state(spec, step - 1);
  const bool was_recording = before.phase != StepPhase::kIdle;
  const bool recording = now.phase != StepPhase::kIdle;
  StepActions a;
  // A window ends when recording stops or a new cycle begins (wait = 0 runs cycles back to back).
  a.close = was_recording && (!recording || now.cycle != before.cycle);
  a.open = recording && (!was_recording || now.cycle != before.cycle);
  a.discard_warmup = now.phase == StepPhase::kRecord && before.phase == StepPhase::kWarmup &&
                     now.cycle == before.cycle;
  if (a.open) {
    const uint64_t cycle_start =
        spec.skip_first + now.cycle * (spec.wait + spec.warmup + spec.active);
    a.first_step = cycle_start + spec.wait + spec.warmup;
    a.last_step = a.first_step + spec.active - 1;
  }
  return a;
}

}  // namespace proton::control
