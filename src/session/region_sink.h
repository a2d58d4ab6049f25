// The sessions' end of the instrumentation runtime: a RegionSink that turns one decoded launch
// into region totals (and trace spans for sessions that keep a trace) and adds them to the
// sessions through the runtime. The backend knows only the RegionSink interface.
#pragma once

#include "backends/instrumentation/instr_runtime.h"

namespace proton::instr {

/// Delivers to the session runtime (LaunchRegions, Runtime::deliver_outside_batch).
class SessionRegionSink final : public RegionSink {
 public:
  void deliver(uint64_t sessions, ContextId ctx, const KernelInfo& kernel,
               const DecodeResult& decoded, uint32_t device_id, uint32_t clock_khz) override;
  bool wants_samples(uint64_t sessions) const override;
};

}  // namespace proton::instr
