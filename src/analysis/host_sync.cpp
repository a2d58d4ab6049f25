// host_sync: a frame that makes the host wait for the GPU again and again: stream, device or
// event synchronizes, and device-to-host copies of a few bytes (reads of a value: .item(),
// .tolist(), print of a tensor), which wait for every kernel before them.
//
// Each wait empties the GPU's queue: the host can no longer run ahead of the GPU, and once it
// resumes the GPU idles until the next kernel is launched. The time the host was blocked is
// evidence, not the saving (the GPU was busy then); the saving is the restart per call
// (kLaunchCostNs), at most the blocked time of each kind of call (a wait that found the GPU
// idle cost nothing).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis/host_call_nodes.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

struct Waits {
  double time_ns = 0;
  double calls = 0;
  double saving_ns = 0;  // per frame of calls: at most its blocked time
  std::string apis;      // the frames' names, ", "-joined
};

}  // namespace

std::vector<Finding> host_sync(const ProfileView& view) {
  std::map<int32_t, Waits> by_caller;
  for (const HostCallNode& h : host_call_nodes(view)) {
    if (h.copy && !reads_back(h)) continue;  // sync_copy's
    Waits& w = by_caller[h.caller];
    w.time_ns += h.time_ns;
    w.calls += h.calls;
    w.saving_ns += std::min(h.time_ns, h.calls * kLaunchCostNs);
    w.apis += (w.apis.empty() ? "" : ", ") + h.api;
  }
  if (by_caller.empty()) return {};
  const double total = total_kernel_time(view);
  const int32_t cpu = view.find_metric("cpu_time (ns)");
  const std::vector<double> kernel_time = view.kernel_sum(view.find_metric("time (ns)"));
  std::vector<Finding> found;
  for (const auto& [caller, w] : by_caller) {
    if (w.calls < kMinHostCalls) continue;
    Finding f = finding_at(view, "host_sync", caller);
    f.number("calls", w.calls)
        .number("blocked_ns", w.time_ns)
        .number("avg_blocked_ns", w.time_ns / w.calls)
        .word("calls_to", w.apis);
    // The share of the enclosing scope's time: its CPU time where cpu_timed_scope measured it
    // (the nearest such frame), else the GPU time of the calling frame.
    std::string share_text;
    int32_t scope = caller;
    while (scope >= 0 && !(view.value(scope, cpu) > 0))
      scope = view.nodes[static_cast<size_t>(scope)].parent;
    if (scope >= 0) {
      double wall = view.value(scope, cpu);
      f.word("scope", view.nodes[static_cast<size_t>(scope)].name)
          .number("scope_cpu_time_ns", wall)
          .number("blocked_share", w.time_ns / wall);
      share_text = ", " + percent(w.time_ns / wall) + " of the " + duration(wall) +
                   " CPU time of '" + view.nodes[static_cast<size_t>(scope)].name + "'";
    } else if (double gpu = kernel_time[static_cast<size_t>(caller)]; gpu > 0) {
      f.number("scope_kernel_time_ns", gpu).number("blocked_share", w.time_ns / gpu);
      share_text =
          ", " + percent(w.time_ns / gpu) + " of the frame's " + duration(gpu) + " of GPU time";
    }
    f.saving_ns = w.saving_ns;
    f.severity = severity_for(*f.saving_ns, total);
    f.seen = count(w.calls) + " waits for the GPU (" + w.apis + ") blocked the host " +
             duration(w.time_ns) + " (" + duration(w.time_ns / w.calls) + " each)" + share_text +
             ".";
    f.why =
        "Each wait empties the GPU's queue: the host cannot run ahead, and the GPU idles "
        "until the host launches again (~" +
        duration(kLaunchCostNs) + " a wait at least, more with the Python work between).";
    f.suggestion =
        "Keep values on the GPU inside the loop: take .item(), .cpu(), .tolist(), print(tensor) "
        "and Python tests of tensor values out of the hot path (accumulate on the GPU and read "
        "once every N steps); copy results with .to(\"cpu\", non_blocking=True) into pinned "
        "memory and wait on a torch.cuda.Event where the host needs them; drop "
        "torch.cuda.synchronize() from the step.";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
