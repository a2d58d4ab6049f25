// hint.*: what the profile lacks for the rules that could say more. Each hint names the rule it
// would feed and how to record what it needs; none has a time at stake.
#include <string>

#include "analysis/launch_model.h"
#include "analysis/rank_stats.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

Finding hint(const ProfileView& view, const char* rule, std::string seen, std::string suggestion) {
  Finding f = finding_at(view, rule, 0);
  f.severity = Severity::kLow;
  f.seen = std::move(seen);
  f.why = "Without it the analyzer cannot say more about this.";
  f.suggestion = std::move(suggestion);
  return f;
}

}  // namespace

std::vector<Finding> missing_sources(const ProfileView& view) {
  std::vector<Finding> out;
  if (view.nodes.empty()) return out;
  double kernels = 0;
  bool declared = false;
  bool peaks = true;
  bool limits = true;  // every kernel with launch facts has its device's SM limits
  LaunchMetrics launch(view);
  int32_t bytes = view.find_metric("bytes");
  std::vector<int32_t> work{bytes};
  for (const char* w : {"flops8", "flops16", "flops32", "flops64", "flops"})
    work.push_back(view.find_metric(w));
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const ViewNode& n = view.nodes[i];
    if (!n.is_kernel()) continue;
    ++kernels;
    bool has_work = false;
    for (int32_t id : work)
      has_work |= view.value(static_cast<int32_t>(i), id) > 0;
    declared |= has_work;
    const ViewDevice* d = view.device(n.device_type, n.device_id);
    if (has_work && (d == nullptr || !(d->peak_bytes_per_s > 0))) peaks = false;
    if (launch.any() && launch_shape(view, launch, static_cast<int32_t>(i)) &&
        (d == nullptr || !(d->max_warps_per_sm > 0))) {
      limits = false;
    }
  }
  if (kernels == 0) {
    out.push_back(hint(view, "hint.kernels", "The profile has no kernels.",
                       "Profile a run that launches GPU kernels (a CPU-only session records "
                       "scopes alone)."));
    return out;
  }
  if (!launch.any()) {
    out.push_back(hint(view, "hint.launch_config",
                       "No kernel has its launch configuration (grid, block, registers, shared "
                       "and local memory): the rules 'occupancy', 'spills' and 'tail_effect' "
                       "have nothing to read.",
                       "Profile with this Proton on the GPU: it records each kernel's launch "
                       "configuration from the GPU's own kernel records (files of "
                       "triton.profiler, of older versions, and graph-level mode have none)."));
  } else if (!limits) {
    out.push_back(hint(view, "hint.device_limits",
                       "Kernels have their launch configuration but their device's SM limits "
                       "are unknown: 'occupancy' and 'tail_effect' cannot place them.",
                       "Write the profile with this Proton on the GPU that ran it: its device "
                       "map records each SM's warps, blocks, registers and shared memory."));
  }
  if (view.find_metric("sync_time (ns)") < 0 && view.find_metric("memcpy_time (ns)") < 0) {
    // Host calls are timed only when asked (the tree stays triton.profiler's otherwise); a
    // profile that timed them and saw none blocking has no such columns either.
    out.push_back(hint(view, "hint.host_calls",
                       "No host call is timed (synchronizes, blocking copies): the rules "
                       "'host_sync' and 'sync_copy' have nothing to read.",
                       "Profile with PROTON_HOST_CALLS=1 (proton --advise sets it): synchronizes "
                       "and blocking or pageable copies are then timed from their API calls, on "
                       "the call path that made them."));
  }
  if (view.find_metric("num_samples") < 0) {
    out.push_back(hint(view, "hint.pcsampling",
                       "No PC samples: the rule 'stall_hot_line' has nothing to read.",
                       "Run with mode=\"pcsampling\" (proton -m pcsampling script.py) to see "
                       "which source lines stall, and why."));
  }
  if (!declared) {
    out.push_back(hint(view, "hint.launch_metadata",
                       "No kernel declares its FLOPs or bytes: the rules 'roofline' and "
                       "'variant_spread' have nothing to read.",
                       "Give Triton kernels a launch_metadata returning flops8/16/32/64 and "
                       "bytes (and run with hook=\"triton\") to place them on the roofline."));
  } else if (!peaks) {
    out.push_back(hint(view, "hint.device_peaks",
                       "Some kernels declare work but their device has no known peak (no device "
                       "map, or an architecture missing from the peak table).",
                       "Write the profile with Proton on the GPU that ran it (it records the "
                       "device map), or compare such kernels by time per unit of work."));
  }
  if (view.find_metric("cpu_time (ns)") < 0) {
    out.push_back(hint(view, "hint.cpu_time",
                       "No scope has CPU time: 'launch_bound' estimates GPU idle time from an "
                       "assumed launch cost.",
                       "Wrap the training or inference step in proton.cpu_timed_scope(\"step\") "
                       "so the GPU's busy share of it is measured."));
  }
  bool merged = view.find_metric(rank_stat_metric("time (ns)", "imbalance")) >= 0;
  if (view.world_size > 1 && !merged) {
    out.push_back(hint(view, "hint.ranks",
                       "This is rank " + count(static_cast<double>(view.rank)) + " of " +
                           count(static_cast<double>(view.world_size)) +
                           ": the rule 'straggler' needs every rank.",
                       "Run the analyzer over all rank files at once "
                       "(proton-viewer --advise NAME.rank*.hatchet) to find straggler ranks."));
  }
  return out;
}

}  // namespace proton::analysis
