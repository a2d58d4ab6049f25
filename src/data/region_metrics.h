// Intra-kernel regions on the call tree: one node per region (nested as the kernel nests them)
// under the kernel's node, with the metrics triton.profiler writes on them.
//
//   cycles             sum over every (CTA, warp) that ran the region, of end - start clocks
//   count              closed regions summed (one per warp per execution)
//   normalized_cycles  cycles / (warps x CTAs) of the launch, summed over launches: the
//                      region's cycles per unit, as Triton 3.6 normalises them
//   mean_warp_cycles   cycles / the units (warps or warp groups) that ran the region, summed
//                      over launches: what one of them spends in it
//   max_warp_cycles    the cycles of each CTA's slowest unit in the region, averaged over the
//                      CTAs that ran it, summed over launches: what the CTA waits for. Its ratio
//                      to mean_warp_cycles is the region's imbalance between warps (1 = even)
//   device_id, device_type   strings ("0", "1" = CUDA), as Triton 3.6 writes them for cycles
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/ids.h"
#include "data/call_tree.h"

namespace proton {

/// One region's totals for one launch; `path` is its name and its enclosing regions' names,
/// outermost first.
struct RegionTotals {
  std::vector<NameId> path;
  uint64_t cycles = 0;
  uint64_t count = 0;
  uint64_t units = 0;                // units (warps, warp groups) that ran it
  uint64_t ctas = 0;                 // CTAs that ran it
  uint64_t slowest_unit_cycles = 0;  // summed over those CTAs: each one's slowest unit
};

/// RegionSpan::group_warps of granularity "cta": one lane per CTA, whatever its warp count.
inline constexpr uint32_t kWholeCta = 0xffff;

/// One region execution on one warp, in GPU global-timer ns (the clock of CUPTI's kernel
/// records), for the timeline.
struct RegionSpan {
  NameId name = kNoName;
  uint32_t sm = 0;
  uint32_t cta = 0;
  uint32_t warp = 0;  // the recording warp (the first of its group)
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t group_warps = 1;  // warps it stands for: 1, a warpgroup (4), ...; kWholeCta
  uint32_t clock_mhz = 0;    // the SM clock its cycles were converted at
  uint32_t finalize_ns = 0;  // its CTA's finalization (the header's post- minus pre-final time)
  uint32_t end_warp = 0;     // an async event's: the warp that ended it (`warp` started it)
  bool async = false;        // an async event (pl.start_event to pl.end_event), not a region
};

/// A launch's extent on the GPU's global timer (ns), from its CTAs' headers and regions: the
/// first CTA's start to the last one's end. The kernel's box on the timeline where no kernel
/// record comes (an instrumentation session without them, the default); {0, 0}: unknown.
struct LaunchSpan {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
};

/// Adds one launch's regions below `kernel`. `units` = warps x CTAs of the launch (> 0).
void add_region_totals(CallTree& tree, CallTree::NodeId kernel,
                       std::span<const RegionTotals> regions, uint64_t units, uint32_t device_id,
                       DeviceType type);

}  // namespace proton
