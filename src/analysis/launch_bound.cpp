// launch_bound: a scope whose launches are mostly kernels shorter than the host's cost of
// launching them. The GPU then waits for the host between kernels, whatever the kernels do.
//
// Per kernel node: launches (count), average time; a launch of a kernel averaging under
// kLaunchCostNs leaves the GPU idle for the difference unless launches run ahead. Per scope:
// with its CPU time (cpu_timed_scope's "cpu_time (ns)") the GPU's busy share of it is measured;
// without, the idle time is estimated from kLaunchCostNs.
#include <cmath>
#include <string>
#include <string_view>

#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

// A scope's launches are "mostly short" when at least this share of them are.
constexpr double kShortShare = 0.5;
// The frame under which Proton (and Triton's Proton) puts the kernels of a graph replay.
constexpr std::string_view kGraphReplayFrame = "<captured_at>";

struct Launches {
  double all = 0;
  double short_ones = 0;
  double kernel_ns = 0;
  double idle_ns = 0;  // estimated
};

}  // namespace

std::vector<Finding> launch_bound(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  int32_t count_id = view.find_metric("count");
  if (time < 0 || count_id < 0) return {};
  int32_t cpu = view.find_metric("cpu_time (ns)");
  std::vector<Launches> sums(view.nodes.size());
  // Kernels replayed from a CUDA graph sit under the "<captured_at>" frame of their replay: the
  // host launched the graph once, not each kernel.
  std::vector<char> replayed(view.nodes.size(), 0);
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    int32_t parent = view.nodes[i].parent;
    replayed[i] = view.nodes[i].name == kGraphReplayFrame ||
                  (parent >= 0 && replayed[static_cast<size_t>(parent)]);
    if (!view.nodes[i].is_kernel() || replayed[i]) continue;
    double c = view.value(static_cast<int32_t>(i), count_id);
    double t = view.value(static_cast<int32_t>(i), time);
    if (!(c > 0) || std::isnan(t)) continue;
    double avg = t / c;
    Launches& l = sums[i];
    l.all = c;
    l.kernel_ns = t;
    if (avg < kShortKernelNs) l.short_ones = c;
    if (avg < kLaunchCostNs) l.idle_ns = c * (kLaunchCostNs - avg);
  }
  for (size_t i = view.nodes.size(); i-- > 1;) {
    // A scope with CPU time settles its launches: enclosing scopes count its measured idle
    // time, not an estimate, and none when it kept the GPU busy.
    double wall = view.value(static_cast<int32_t>(i), cpu);
    if (wall > 0) {
      if (sums[i].kernel_ns / wall >= kBusyShare) {
        sums[i].short_ones = 0;
        sums[i].idle_ns = 0;
      } else {
        sums[i].idle_ns = wall - sums[i].kernel_ns;
      }
    }
    Launches& up = sums[static_cast<size_t>(view.nodes[i].parent)];
    up.all += sums[i].all;
    up.short_ones += sums[i].short_ones;
    up.kernel_ns += sums[i].kernel_ns;
    up.idle_ns += sums[i].idle_ns;
  }
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const Launches& l = sums[i];
    if (view.nodes[i].is_kernel() || l.short_ones < kMinLaunches ||
        l.short_ones < kShortShare * l.all)
      continue;
    auto node = static_cast<int32_t>(i);
    double wall = view.value(node, cpu);
    double avg = l.kernel_ns / l.all;
    Finding f = finding_at(view, "launch_bound", node);
    f.number("launches", l.all)
        .number("short_launches", l.short_ones)
        .number("avg_kernel_ns", avg)
        .number("kernel_time_ns", l.kernel_ns);
    std::string seen = count(l.all) + " kernel launches averaging " + duration(avg) + " (" +
                       count(l.short_ones) + " under " + duration(kShortKernelNs) + ")";
    if (wall > 0) {
      double busy = l.kernel_ns / wall;
      if (busy >= kBusyShare) continue;
      f.number("cpu_time_ns", wall).number("gpu_busy_share", busy);
      f.saving_ns = wall - l.kernel_ns;
      seen +=
          "; the GPU was busy " + percent(busy) + " of the scope's " + duration(wall) + " CPU time";
      f.why = "The GPU idles " + duration(*f.saving_ns) +
              " in this scope waiting for the host to launch the next kernel.";
    } else {
      if (!(l.idle_ns > 0)) continue;
      f.number("launch_cost_ns", kLaunchCostNs);
      f.saving_ns = l.idle_ns;
      f.why = "At ~" + duration(kLaunchCostNs) + " of host time per launch, the GPU waits about " +
              duration(l.idle_ns) +
              " for launches (an estimate: wrap the scope in proton.cpu_timed_scope to measure "
              "it).";
    }
    f.seen = seen + ".";
    f.severity = severity_for(*f.saving_ns, total);
    f.suggestion =
        "Launch fewer, larger kernels: capture the scope in a CUDA graph (torch.cuda.graphs, or "
        "torch.compile(mode=\"reduce-overhead\")), or fuse the short kernels (torch.compile, one "
        "Triton kernel for several elementwise ops).";
    found.push_back(std::move(f));
  }
  return innermost(view, std::move(found), [](const Finding& f) { return *f.saving_ns; });
}

}  // namespace proton::analysis
