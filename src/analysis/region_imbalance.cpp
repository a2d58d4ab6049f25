// region_imbalance: intra-kernel regions (instrumentation mode) whose slowest warp in each CTA
// spends far longer in them than the warps that ran them do on average. The profile holds, per
// region, mean_warp_cycles (cycles per warp or warp group that ran it) and max_warp_cycles (the
// cycles of each CTA's slowest one, averaged over CTAs), both summed over launches. A CTA ends
// with its slowest warp: at kRegionImbalance or more the region is the critical path, as in a
// warp-specialized kernel where one partition waits on another. Regions under kRegionMinShare
// of their kernel's region cycles are left out.
#include <cmath>
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

// A region is a node with cycles of its own; other frames have none, or the 0 a reader fills in
// for a column the node lacks.
bool is_region(const ProfileView& view, int32_t node, int32_t cycles_id) {
  return view.value(node, cycles_id) > 0;
}

// The frame of the kernel a region ran in: the nearest ancestor that is no region. Not
// is_kernel(): without kernel records (an instrumentation session's default) the kernel's frame
// has no device, while its regions have one (the device their cycles were read on).
int32_t kernel_of(const ProfileView& view, int32_t node, int32_t cycles_id) {
  int32_t a = view.nodes[static_cast<size_t>(node)].parent;
  while (a > 0 && is_region(view, a, cycles_id))
    a = view.nodes[static_cast<size_t>(a)].parent;
  return a;
}

}  // namespace

std::vector<Finding> region_imbalance(const ProfileView& view) {
  int32_t mean_id = view.find_metric("mean_warp_cycles");
  int32_t max_id = view.find_metric("max_warp_cycles");
  int32_t cycles_id = view.find_metric("cycles");
  if (mean_id < 0 || max_id < 0 || cycles_id < 0) return {};
  // A kernel's region cycles: the sum over its top-level regions (nested ones are inside them).
  std::vector<double> kernel_cycles(view.nodes.size(), 0);
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    int32_t parent = view.nodes[i].parent;
    double c = view.value(static_cast<int32_t>(i), cycles_id);
    if (c > 0 && !is_region(view, parent, cycles_id))
      kernel_cycles[static_cast<size_t>(parent)] += c;
  }
  std::vector<Finding> found;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    auto node = static_cast<int32_t>(i);
    double mean = view.value(node, mean_id);
    double slowest = view.value(node, max_id);
    double cycles = view.value(node, cycles_id);
    if (!(mean > 0) || !(slowest >= kRegionImbalance * mean)) continue;
    int32_t kernel = kernel_of(view, node, cycles_id);
    double kc = kernel >= 0 ? kernel_cycles[static_cast<size_t>(kernel)] : kNoValue;
    double share = kc > 0 && cycles > 0 ? cycles / kc : kNoValue;
    if (!(share >= kRegionMinShare)) continue;
    double ratio = slowest / mean;
    Finding f = finding_at(view, "region_imbalance", node);
    f.number("max_warp_cycles", slowest)
        .number("mean_warp_cycles", mean)
        .number("imbalance", ratio)
        .number("region_cycle_share", share);
    if (kernel > 0) f.word("kernel", view.nodes[static_cast<size_t>(kernel)].name);
    // Cycles, not ns: no honest time at stake.
    f.severity =
        ratio >= kRegionImbalanceMedium || share >= 0.5 ? Severity::kMedium : Severity::kLow;
    f.seen = "In each CTA the slowest warp spends " + count(std::round(slowest)) +
             " cycles in this region, " + fixed(ratio, 2) + "x the " + count(std::round(mean)) +
             " of an average warp that runs it; the region holds " + percent(share) +
             " of its kernel's region cycles.";
    f.why =
        "A CTA finishes with its slowest warp: the others idle (or wait at a barrier) for "
        "the difference, so this region is the kernel's critical path.";
    f.suggestion =
        "Balance the work between warps: in a warp-specialized kernel give the slow partition "
        "more warps or registers (or move work to the idle one), deepen the pipeline between "
        "producer and consumer (more stages/buffers) so neither waits, or split the slow "
        "warps' loop across more warps. Check the timeline (data=\"trace\") for which warps "
        "are slow.";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
