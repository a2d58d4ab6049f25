#include "session/region_sink.h"

#include <vector>

#include "attribution/launch_stage.h"
#include "backends/instrumentation/region_totals.h"
#include "session/runtime.h"

namespace proton::instr {

bool SessionRegionSink::wants_samples(uint64_t sessions) const {
  return (sessions & LaunchStage::trace_sessions.load(std::memory_order_relaxed)) != 0;
}

void SessionRegionSink::deliver(uint64_t sessions, ContextId ctx, const KernelInfo& k,
                                const DecodeResult& d, uint32_t device_id, uint32_t clock_khz) {
  std::vector<RegionTotals> totals = region_totals(k, d);
  if (totals.empty()) return;
  uint64_t units = uint64_t{k.layout.num_warps} * (d.ctas.size() + d.skipped_ctas);
  // Spans only for sessions that keep a trace: a tree-only run skips one record per region.
  std::vector<RegionSpan> spans;
  LaunchSpan launch;
  if (wants_samples(sessions)) {
    launch = launch_span(d);
    spans = region_spans(k, d, clock_khz, &launch);
  }
  Runtime::get().deliver_outside_batch(
      sessions, LaunchRegions{ctx, k.name, totals, units, device_id, spans, launch});
}

}  // namespace proton::instr
