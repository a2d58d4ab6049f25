// stall_hot_line: the source lines of a kernel that hold a large share of its PC samples
// (mode="pcsampling"), named by the family of stall reasons that dominates them, with advice
// for that family.
//
// Line nodes are a kernel's children carrying "num_samples" and "stalled_<reason>". Samples of
// an issuing warp ("selected") are not stalls. The time at stake is the kernel's time times the
// line's share of stalled samples: the time warps spent waiting there.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/pc_stall_reasons.h"

namespace proton::analysis {

namespace {

const char* advice(StallFamily family) {
  switch (family) {
    case StallFamily::kMemory:
      return "Warps wait on memory here: prefetch further ahead (more num_stages), make the "
             "accesses contiguous so they coalesce, keep reused data in shared memory, or move "
             "the first use of a loaded value later.";
    case StallFamily::kDependency:
      return "Warps wait on results of earlier instructions: give each warp independent work "
             "to interleave (unroll, larger tiles) or more warps per SM to hide the latency.";
    case StallFamily::kSynchronization:
      return "Warps wait at barriers: balance the work between warps, move barriers out of the "
             "loop, or pipeline producer and consumer warps (warp specialization).";
    case StallFamily::kIssue:
      return "The scheduler or a pipe is saturated: do fewer instructions per element "
             "(vectorize, hoist invariant math), use tensor cores for the products, avoid "
             "divergent branches.";
    case StallFamily::kOther:
      break;
  }
  return "The stall reasons are spread: read the line's top reasons with proton-viewer --source.";
}

struct Line {
  int32_t node;
  double samples;
  double stalled;
  std::array<double, kStallFamilies> families{};
  std::string top_reason;
  double top_reason_samples = 0;
};

}  // namespace

std::vector<Finding> stall_hot_lines(const ProfileView& view) {
  int32_t samples_id = view.find_metric("num_samples");
  if (samples_id < 0) return {};
  int32_t time = view.find_metric("time (ns)");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (size_t k = 0; k < view.nodes.size(); ++k) {
    const ViewNode& kernel = view.nodes[k];
    if (!kernel.is_kernel()) continue;
    std::vector<Line> lines;
    double kernel_samples = 0;
    for (int32_t c : kernel.children) {
      double s = view.value(c, samples_id);
      if (!(s > 0)) continue;
      kernel_samples += s;
      Line l{c, s, 0, {}, {}, 0};
      for (const auto& [m, v] : view.nodes[static_cast<size_t>(c)].values) {
        const std::string& name = view.metrics[static_cast<size_t>(m)];
        if (!name.starts_with("stalled_") || stall_is_issue(name) || !(v > 0)) continue;
        l.stalled += v;
        l.families[static_cast<size_t>(stall_family(name))] += v;
        if (v > l.top_reason_samples) {
          l.top_reason_samples = v;
          l.top_reason = std::string(stall_short_name(name));
        }
      }
      lines.push_back(std::move(l));
    }
    if (!(kernel_samples > 0)) continue;
    std::stable_sort(lines.begin(), lines.end(),
                     [](const Line& a, const Line& b) { return a.samples > b.samples; });
    double kernel_time = view.value(static_cast<int32_t>(k), time);
    int shown = 0;
    for (const Line& l : lines) {
      if (shown == kHotLinesPerKernel) break;
      double share = l.samples / kernel_samples;
      if (l.samples < kMinSamples || share < kHotLineShare || !(l.stalled > 0)) continue;
      ++shown;
      auto top = std::max_element(l.families.begin(), l.families.end());
      auto family = static_cast<StallFamily>(top - l.families.begin());
      Finding f = finding_at(view, "stall_hot_line", l.node);
      f.word("family", stall_family_name(family))
          .word("top_reason", l.top_reason)
          .number("samples", l.samples)
          .number("kernel_samples", kernel_samples)
          .number("share_of_kernel", share)
          .number("stalled_samples", l.stalled)
          .number("family_share_of_stalls", *top / l.stalled);
      f.seen = "This line holds " + percent(share) + " of the kernel's PC samples; " +
               percent(*top / l.stalled) + " of its stalls are " + stall_family_name(family) +
               " (mostly " + l.top_reason + ").";
      if (kernel_time > 0) {
        f.number("kernel_time_ns", kernel_time);
        f.saving_ns = kernel_time * l.stalled / kernel_samples;
        f.severity = severity_for(*f.saving_ns, total);
        f.why = "Warps stalled on this line account for about " + duration(*f.saving_ns) +
                " of the kernel's " + duration(kernel_time) + ".";
      } else {
        f.severity = share >= 2 * kHotLineShare ? Severity::kMedium : Severity::kLow;
        f.why = "The kernel's time is not in the profile, so the time at stake is unknown.";
      }
      f.suggestion = advice(family);
      found.push_back(std::move(f));
    }
  }
  return found;
}

}  // namespace proton::analysis
