// comm_exposed: a collective (NCCL) kernel node whose GPU time mostly ran while no compute
// kernel ran on its device. Reads "exposed_comm (ns)", which Proton writes only on collective
// kernel nodes (summed over their launches), beside the node's "time (ns)". Fires when the
// exposed time is at least kCommExposedShare of the node's time and a significant share of the
// profile's kernel time. The exposed time is an upper bound of what overlap could hide: the
// measurement errs toward exposed, and a collective can only hide behind compute that does not
// depend on its result.
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

std::vector<Finding> comm_exposed(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  int32_t exposed_id = view.find_metric("exposed_comm (ns)");
  if (time < 0 || exposed_id < 0) return {};
  int32_t count_id = view.find_metric("count");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    auto node = static_cast<int32_t>(i);
    if (!view.nodes[i].is_kernel()) continue;
    double t = view.value(node, time);
    double exposed = view.value(node, exposed_id);
    if (!(t > 0) || !(exposed >= 0) || !(exposed <= t)) continue;  // none, or a damaged file
    double share = exposed / t;
    if (!(share >= kCommExposedShare) || !significant_kernel_time(exposed, total)) continue;
    double calls = view.value(node, count_id);
    Finding f = finding_at(view, "comm_exposed", node);
    f.number("comm_ns", t).number("exposed_ns", exposed).number("exposed_share", share);
    f.number("share_of_kernel_time", exposed / total);
    if (calls > 0) f.number("count", calls);
    f.saving_ns = exposed;  // an upper bound: all of it hidden behind independent compute
    f.severity = severity_for(exposed, total);
    f.seen = "This collective ran " + duration(t) +
             (calls > 0 ? " in " + count(calls) + " launches" : std::string()) + ", " +
             duration(exposed) + " of it (" + percent(share) +
             ") with no compute kernel on its GPU; that is " + percent(exposed / total) +
             " of the profile's kernel time.";
    f.why = "While a collective runs alone the GPU's compute units wait for the network: up to " +
            duration(exposed) +
            " could be hidden behind compute that does not need its result (an upper bound: "
            "records that came late count as not overlapped).";
    f.suggestion =
        "Overlap communication with compute. DDP: smaller buckets (bucket_cap_mb) so all-reduces "
        "start during the backward pass, gradient_as_bucket_view=True, no sync point between "
        "backward and the optimizer step; FSDP: forward_prefetch / backward_prefetch "
        "(BACKWARD_PRE), limit_all_gathers; your own collectives: async_op=True and wait() only "
        "where the result is needed, with NCCL on its own stream; order the work so compute "
        "that does not depend on the collective is queued between its launch and its wait.";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
