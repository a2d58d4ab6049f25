// tail_effect: kernels whose grid leaves SMs idle, from the grid size against a wave (the SMs
// times the blocks one SM holds, launch_model.h). Two shapes:
//   small_grid    fewer blocks than SMs: the SMs without one idle for the whole kernel;
//   partial_wave  a few waves and a last one mostly empty: the kernel takes ceil(waves) wave
//                 times for `waves` waves of work.
// Between (at least one block per SM, one wave at most) every SM is busy: fewer blocks per SM
// than it could hold is the occupancy rule's matter, not a tail. Kernels averaging under
// kShortKernelNs a launch are launch-bound, not grid-bound. Kernels whose launches differ
// (the grid follows the shape) and cluster launches (placed by GPU clusters, not by SM) are
// left out. The time at stake assumes blocks of equal time: an upper bound.
#include <cmath>
#include <string>

#include "analysis/launch_model.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

std::vector<Finding> tail_effect(const ProfileView& view) {
  LaunchMetrics ids(view);
  if (!ids.any()) return {};
  int32_t count_id = view.find_metric("count");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (auto [node, t] : significant_kernels(view)) {
    const ViewNode& n = view.nodes[static_cast<size_t>(node)];
    const ViewDevice* d = view.device(n.device_type, n.device_id);
    auto s = launch_shape(view, ids, node);
    if (d == nullptr || !s || s->varies || s->cluster_blocks > 1 || !(d->num_sms > 0)) continue;
    // A kernel of a few microseconds is launch-bound: its fixed cost, not its grid, sets its
    // time (launch_bound speaks for it).
    double c = view.value(node, count_id);
    if (c > 0 && t / c < kShortKernelNs) continue;
    auto o = theoretical_occupancy(*d, *s);
    if (!o) continue;
    double sms = d->num_sms;
    double slots = sms * o->blocks_per_sm;
    double waves = s->grid_blocks / slots;
    bool small = s->grid_blocks < sms;
    if (!small && waves <= 1) continue;
    double full = std::ceil(waves);
    double idle = small ? 1 - s->grid_blocks / sms : (full - waves) / full;
    if (idle < kTailWasteShare) continue;
    Finding f = finding_at(view, "tail_effect", node);
    f.word("shape", small ? "small_grid" : "partial_wave");
    f.number("grid_blocks", s->grid_blocks).number("num_sms", sms);
    f.number("blocks_per_sm", o->blocks_per_sm).number("waves", waves);
    f.number("idle_share", idle).number("time_ns", t);
    if (c > 0) f.number("count", c);
    f.saving_ns = t * idle;
    f.severity = severity_for(*f.saving_ns, total);
    if (small) {
      f.seen = "The grid's " + count(s->grid_blocks) + " blocks occupy " + count(s->grid_blocks) +
               " of " + count(sms) + " SMs: " + percent(idle) +
               " of the GPU idles through this kernel's " + duration(t) + ".";
      f.why =
          "An SM without a block does nothing for the kernel; with the work spread over every "
          "SM (blocks of equal time) it would take " +
          duration(t - *f.saving_ns) + ".";
      f.suggestion =
          "Give the GPU more blocks: smaller tiles (BLOCK_M/N), a split of the reduction "
          "dimension (split-K) or a stream-K schedule, or independent work batched into one "
          "launch.";
    } else {
      double last = waves - std::floor(waves);
      f.number("last_wave_fill", last);
      f.seen = fixed(waves, 2) + " waves of " + count(slots) + " blocks (" + count(sms) +
               " SMs x " + count(o->blocks_per_sm) + "): the last wave fills " + percent(last) +
               " of them, so the kernel takes " + count(full) + " waves' time for " +
               fixed(waves, 2) + " waves of work.";
      f.why =
          "Blocks run in waves; the SMs left without a block in the last wave idle while the "
          "others finish it (blocks of equal time assumed).";
      f.suggestion = "Make the grid a whole number of waves (a multiple of " + count(slots) +
                     " blocks) by changing the tile size, or loop over tiles in a persistent "
                     "kernel launched with " +
                     count(slots) + " programs.";
    }
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
