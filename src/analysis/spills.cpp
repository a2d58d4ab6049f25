// spills: kernels whose threads keep values in local memory (the launch facts'
// local_bytes_per_thread: register spills, or arrays the compiler could not keep in registers),
// from kMinLocalBytes: below it, the small arrays of math routines in kernels that never spill.
#include <algorithm>
#include <string>

#include "analysis/launch_model.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

std::vector<Finding> spills(const ProfileView& view) {
  LaunchMetrics ids(view);
  int32_t time = view.find_metric("time (ns)");
  if (!ids.any() || ids.local < 0 || time < 0) return {};
  int32_t count_id = view.find_metric("count");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const ViewNode& n = view.nodes[i];
    auto node = static_cast<int32_t>(i);
    double t = view.value(node, time);
    if (!n.is_kernel() || !significant_kernel_time(t, total)) continue;
    auto s = launch_shape(view, ids, node);
    if (!s || !(s->local_bytes_per_thread >= kMinLocalBytes)) continue;
    Finding f = finding_at(view, "spills", node);
    f.number("local_bytes_per_thread", s->local_bytes_per_thread);
    f.number("registers_per_thread", s->registers_per_thread);
    f.number("threads_per_block", s->threads_per_block);
    f.number("time_ns", t);
    double c = view.value(node, count_id);
    if (c > 0) f.number("count", c);
    // No honest time at stake (what a spill costs depends on how often the value is reloaded);
    // severity from the kernel's share of the time, at most medium.
    f.severity = std::max(severity_for(t, total), Severity::kMedium);
    f.seen = "Each thread keeps " + kilobytes(s->local_bytes_per_thread) +
             " in local memory (register spills or local arrays) beside its " +
             count(s->registers_per_thread) + " registers; " + duration(t) + " in this kernel.";
    f.why =
        "Local memory is device memory behind the L1 cache: every spilled value is a store and "
        "a later load with hundreds of cycles of latency instead of a register read, and the "
        "traffic competes with the kernel's own loads.";
    f.suggestion =
        "Lower the register pressure so fewer values are live at once: spread the same tile "
        "over more threads (more num_warps), use smaller tiles (BLOCK sizes) or fewer pipeline "
        "stages (num_stages). Triton's compiled kernel reports its spills (n_spills) and "
        "registers (n_regs) for each config.";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
