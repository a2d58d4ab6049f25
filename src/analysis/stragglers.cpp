// straggler: in a profile merged from several ranks, the frames where the slowest rank's time
// is well above the mean of the ranks that ran them. The others wait for it at the next
// collective, so (max - mean) is time every other rank loses.
//
// Reads the merge's statistics (rank_stats.h) of "time (ns)": max, mean, argmax, imbalance.
#include <cmath>
#include <string>

#include "analysis/rank_stats.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

std::vector<Finding> stragglers(const ProfileView& view) {
  const std::string metric = "time (ns)";
  int32_t imbalance = view.find_metric(rank_stat_metric(metric, "imbalance"));
  int32_t high = view.find_metric(rank_stat_metric(metric, "max"));
  int32_t mean = view.find_metric(rank_stat_metric(metric, "mean"));
  int32_t arg = view.find_metric(rank_stat_metric(metric, "argmax"));
  if (imbalance < 0 || high < 0 || mean < 0 || view.nodes.empty()) return {};
  int32_t ranks = view.find_metric("ranks (exc)");
  double run = view.value(0, mean);
  if (!(run > 0)) return {};
  std::vector<Finding> found;
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    auto node = static_cast<int32_t>(i);
    double ratio = view.value(node, imbalance);
    double max = view.value(node, high);
    double avg = view.value(node, mean);
    if (!(ratio >= kStragglerImbalance) || !(max >= kStragglerMinShare * run) || !(avg > 0))
      continue;
    Finding f = finding_at(view, "straggler", node);
    double rank = view.value(node, arg);
    double present = view.value(node, ranks);
    f.number("imbalance", ratio).number("max_ns", max).number("mean_ns", avg);
    if (!std::isnan(rank)) f.number("slowest_rank", rank);
    if (present > 0) f.number("ranks", present);
    // The mean counts ranks lacking the frame as 0; imbalance is over the ranks that ran it.
    double mean_present = max / ratio;
    f.saving_ns = max - mean_present;
    f.severity = severity_for(*f.saving_ns, run);
    f.seen = (std::isnan(rank) ? std::string("One rank") : "Rank " + count(rank)) + " took " +
             duration(max) + " here, " + fixed(ratio, 2) + "x the mean of the ranks that ran it (" +
             duration(mean_present) + ").";
    f.why = "The other ranks wait about " + duration(*f.saving_ns) +
            " for it at the next collective, each.";
    f.suggestion =
        "Balance the work per rank (shard sizes, sequence-length bucketing, data loading), and "
        "check the slow rank's host and GPU (clocks, other processes, its NCCL links).";
    found.push_back(std::move(f));
  }
  return innermost(view, std::move(found), [](const Finding& f) { return *f.saving_ns; });
}

}  // namespace proton::analysis
