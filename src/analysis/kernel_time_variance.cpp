// kernel_time_variance: one kernel on one call path whose launches take widely different times.
// From the node's count, total and its shortest and longest launch (time_min/time_max): the
// mean launch at least kVarianceMeanOverMin times the fastest and the longest at least
// kVarianceMaxOverMin times it, over at least kVarianceMinLaunches launches. A single slow
// first launch (cold caches, lazy loading) raises the maximum but hardly the mean, so it alone
// never fires. Launches of several grids on the node (launch_config_varies) may be launches on
// inputs of different sizes (an eager framework's elementwise kernel serves every tensor of a
// layer): the spread is then the sizes themselves, so no saving is claimed and it stays low; one
// shape points at contention, data-dependent work or clocks.
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/kernel_facts.h"
#include "format/launch_facts.h"

namespace proton::analysis {

std::vector<Finding> kernel_time_variance(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  int32_t count_id = view.find_metric("count");
  int32_t min_id = view.find_metric(format::kernel_facts::kTimeMin);
  int32_t max_id = view.find_metric(format::kernel_facts::kTimeMax);
  if (time < 0 || count_id < 0 || min_id < 0 || max_id < 0) return {};
  int32_t varies_id = view.find_metric(format::launch_facts::kVaries);
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (auto [node, t] : significant_kernels(view)) {
    double c = view.value(node, count_id);
    double lo = view.value(node, min_id);
    double hi = view.value(node, max_id);
    if (!(c >= kVarianceMinLaunches) || !(lo > 0) || !(hi >= lo)) continue;
    double mean = t / c;
    if (!(mean >= kVarianceMeanOverMin * lo) || !(hi >= kVarianceMaxOverMin * lo)) continue;
    bool shapes = view.value(node, varies_id) > 0;
    Finding f = finding_at(view, "kernel_time_variance", node);
    f.number("count", c)
        .number("time_ns", t)
        .number("min_ns", lo)
        .number("mean_ns", mean)
        .number("max_ns", hi)
        .number("mean_over_min", mean / lo)
        .number("max_over_min", hi / lo)
        .word("launch_config_varies", shapes ? "yes" : "no");
    if (shapes) {
      // Larger inputs take longer: the fastest launch's pace is no honest target.
      f.severity = Severity::kLow;
    } else {
      // Were every launch as fast as the fastest: an upper bound of what evening them out wins.
      f.saving_ns = t - c * lo;
      f.severity = severity_for(*f.saving_ns, total);
    }
    f.seen = count(c) + " launches of this kernel on this path take " + duration(lo) + " to " +
             duration(hi) + " (mean " + duration(mean) + ", " + fixed(mean / lo, 2) +
             "x the fastest)" +
             (shapes ? "; its launches used more than one grid or block shape." : ".");
    f.why = shapes ? "Launches of different shapes do different amounts of work, so part or all of "
                     "the spread may be the sizes themselves: no time is claimed."
                   : "At the fastest launch's pace these launches would take " +
                         duration(*f.saving_ns) +
                         " less; a spread this wide is more than clock boost or warm caches "
                         "explain.";
    f.suggestion =
        shapes ? "If this path runs the kernel on inputs of different sizes (one elementwise "
                 "kernel for every tensor of a layer), give the calls scopes of their own to "
                 "compare them. If the shapes come from the data (sequence lengths, batch sizes, "
                 "routing), bucket or pad them so each bucket reuses one tuned config, or let the "
                 "autotune key include the shape."
               : "One shape, different times: look for contention (kernels of other streams or "
                 "processes on the GPU at the same time, NCCL overlapping compute), data-dependent "
                 "work inside the kernel (early exits, sparse or skewed inputs), autotuning "
                 "launches recorded under this path, or clocks (power or thermal throttling: "
                 "compare SM clocks over the run, e.g. nvidia-smi -q -d CLOCK).";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
