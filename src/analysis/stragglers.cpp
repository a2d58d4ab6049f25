// straggler: in a profile merged from several ranks, the frames where the slowest rank's time
// is well above the mean of the ranks that ran it. The others wait for it at the next
// collective, so (max - mean) is time every other rank loses.
//
// Reads the merge's statistics (rank_stats.h) of "time (ns)": max, mean, argmax, imbalance.
//
// Collectives (NCCL kernels) are the other side of a straggler: the ranks that arrive first wait
// inside the collective for the one that arrives last, so the most time there belongs to the
// fastest rank. Their nodes are never findings, and a frame holding them is judged on its time
// outside them: the mean loses the collectives' mean exactly; the max loses at most the sum of
// the collectives' maxima, which bounds any rank's collective time from above. What remains is a
// lower bound of the slowest rank's compute: a frame fires only when that bound alone is
// imbalanced, and the rank it names (the frame's argmax) then holds at least that much compute.
//
// A rank that waits in a collective keeps NCCL's kernel spinning on its GPU, and its compute
// beside it runs slower: in a DDP step where rank 1 computed 20 GEMMs more, rank 0's backward
// GEMMs ran 1.2x slower while its all-reduce waited for rank 1. So a finding whose rank is also
// the rank that waited longest in the collectives of its frame (the frame itself or the nearest
// enclosing one holding collectives), by at least the finding's excess, is a consequence, not a
// cause: it stays, low, with no time claimed, and says so.
#include <cmath>
#include <string>
#include <vector>

#include "analysis/rank_stats.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

// The rank that waited longest in a collective, and by how much over the mean.
struct Wait {
  double rank = kNoValue;
  double excess = 0;
};

// Per node: whether it is a collective (one name scan per node), the sums over the collective
// kernel nodes at or below it of their mean and max, and the longest wait among them.
struct CollectiveTime {
  std::vector<char> is;
  std::vector<double> mean;
  std::vector<double> max;
  std::vector<Wait> wait;
};

CollectiveTime collective_time(const ProfileView& view, int32_t mean, int32_t high, int32_t arg) {
  const size_t n = view.nodes.size();
  CollectiveTime c{std::vector<char>(n, 0), std::vector<double>(n, 0.0),
                   std::vector<double>(n, 0.0), std::vector<Wait>(n)};
  for (size_t i = 0; i < n; ++i)
    c.is[i] = is_collective(view, static_cast<int32_t>(i)) ? 1 : 0;
  // Children come after their parents: a reverse sweep is a post-order walk.
  for (size_t i = n; i-- > 0;) {
    auto node = static_cast<int32_t>(i);
    if (c.is[i]) {
      double m = view.value(node, mean);
      double x = view.value(node, high);
      // A collective's children (none in Proton's files) are inside its time already.
      c.mean[i] = std::isnan(m) ? 0 : m;
      c.max[i] = std::isnan(x) ? 0 : x;
      c.wait[i] = {view.value(node, arg), c.max[i] - c.mean[i]};
    }
    int32_t parent = view.nodes[i].parent;
    if (parent >= 0 && !c.is[static_cast<size_t>(parent)]) {
      auto p = static_cast<size_t>(parent);
      c.mean[p] += c.mean[i];
      c.max[p] += c.max[i];
      if (c.wait[i].excess > c.wait[p].excess) c.wait[p] = c.wait[i];
    }
  }
  // Top down: a frame without collectives takes the nearest enclosing frame's wait.
  for (size_t i = 1; i < n; ++i) {
    auto parent = static_cast<size_t>(view.nodes[i].parent);
    if (c.mean[i] == 0 && c.max[i] == 0 && parent < n) c.wait[i] = c.wait[parent];
  }
  return c;
}

}  // namespace

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
  CollectiveTime comm = collective_time(view, mean, high, arg);
  std::vector<Finding> found;
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    auto node = static_cast<int32_t>(i);
    if (comm.is[i]) continue;
    double ratio = view.value(node, imbalance);
    double max = view.value(node, high);
    double avg = view.value(node, mean);
    if (!(ratio > 0) || !(max > 0) || !(avg > 0)) continue;
    // The mean counts ranks lacking the frame as 0; the imbalance is over the ranks that ran
    // it: their share of all ranks turns one mean into the other.
    double present = avg * ratio / max;
    double comm_mean = comm.mean[i];
    double comm_max = comm.max[i];
    bool outside = comm_mean > 0 || comm_max > 0;
    double slow = max - comm_max;                  // at least, outside collectives
    double typical = (avg - comm_mean) / present;  // the mean of the ranks that ran it
    if (!(slow > 0) || !(typical > 0)) continue;
    double own_ratio = slow / typical;
    if (!(own_ratio >= kStragglerImbalance) || !(slow >= kStragglerMinShare * run)) continue;
    Finding f = finding_at(view, "straggler", node);
    double rank = view.value(node, arg);
    double ran = view.value(node, ranks);
    f.number("imbalance", own_ratio).number("max_ns", slow).number("mean_ns", typical);
    if (outside) f.number("collective_mean_ns", comm_mean);
    if (!std::isnan(rank)) f.number("slowest_rank", rank);
    if (ran > 0) f.number("ranks", ran);
    std::string who = std::isnan(rank) ? std::string("One rank") : "Rank " + count(rank);
    f.seen = outside ? who + " spent at least " + duration(slow) + " here outside collectives, " +
                           fixed(own_ratio, 2) + "x the mean of the ranks that ran it (" +
                           duration(typical) + ")."
                     : who + " took " + duration(slow) + " here, " + fixed(own_ratio, 2) +
                           "x the mean of the ranks that ran it (" + duration(typical) + ").";
    const Wait& beside = comm.wait[i];
    if (!std::isnan(rank) && beside.rank == rank && beside.excess >= slow - typical) {
      // The rank that waited: its compute ran beside NCCL's spinning kernel.
      f.word("waited_in_collective", "yes").number("collective_wait_excess_ns", beside.excess);
      f.severity = Severity::kLow;
      f.seen += " It is also the rank that waited longest in the collectives of this frame (" +
                duration(beside.excess) + " over their mean).";
      f.why =
          "A rank waiting in a collective keeps its kernel spinning on the GPU, and compute "
          "beside it runs slower: this is likely the consequence of another rank's delay, "
          "not a cause. No time is claimed.";
      f.suggestion =
          "Look at the straggler findings that name another rank first; if this one stays when "
          "they are fixed, balance the work per rank and check this rank's host and GPU.";
    } else {
      f.saving_ns = slow - typical;
      f.severity = severity_for(*f.saving_ns, run);
      f.why = "The other ranks wait about " + duration(*f.saving_ns) +
              " for it at the next collective, each.";
      f.suggestion =
          "Balance the work per rank (shard sizes, sequence-length bucketing, data loading), and "
          "check the slow rank's host and GPU (clocks, other processes, its NCCL links).";
    }
    found.push_back(std::move(f));
  }
  return innermost(view, std::move(found),
                   [](const Finding& f) { return f.saving_ns.value_or(0.0); });
}

}  // namespace proton::analysis
