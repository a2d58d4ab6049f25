#include "session/session.h"

namespace proton {

std::string Session::output_path(std::string_view format) const {
  std::string ext = format == "hatchet_msgpack" ? ".hatchet.msgpack"
                    : format == "chrome_trace"  ? ".chrome_trace"
                                                : ".hatchet";
  const std::string& name = config_.name;
  if (name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    return name;
  }
  return name + ext;
}

void Session::add_kernel(const LaunchTag& tag, const KernelRecord& r) {
  ContextId ctx = config_.context == "python" && tag.python_context != kRootContext
                      ? tag.python_context
                      : tag.context;
  std::lock_guard lock(mu);
  CallTree::NodeId kernel = tree_.child(tree_.node_for_context(ctx), r.name);
  tree_.add_kernel(kernel, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0, r.device_id,
                   r.device_type);
  if (tag.flags & kTagUnattributed) ++unattributed_kernels;
}

void Session::add_metrics(ContextId ctx, std::span<const std::pair<NameId, MetricValue>> metrics) {
  std::lock_guard lock(mu);
  CallTree::NodeId node = tree_.node_for_context(ctx);
  for (const auto& [name, value] : metrics)
    tree_.add_metric(node, name, value);
}

}  // namespace proton
