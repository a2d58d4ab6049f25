#include "analysis/host_call_nodes.h"

#include <string_view>

#include "analysis/rules.h"

namespace proton::analysis {

std::vector<HostCallNode> host_call_nodes(const ProfileView& view) {
  std::vector<HostCallNode> out;
  const int32_t sync_time = view.find_metric("sync_time (ns)");
  const int32_t sync_calls = view.find_metric("sync_calls");
  const int32_t copy_time = view.find_metric("memcpy_time (ns)");
  const int32_t copy_calls = view.find_metric("memcpy_calls");
  const int32_t copy_bytes = view.find_metric("memcpy_bytes");
  if (sync_time < 0 && copy_time < 0) return out;
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    const ViewNode& n = view.nodes[i];
    if (n.is_kernel() || n.parent < 0) continue;
    const std::string_view name = n.name;
    HostCallNode h;
    h.node = static_cast<int32_t>(i);
    h.caller = n.parent;
    h.api = n.name;
    if (name == "cudaStreamSynchronize" || name == "cudaDeviceSynchronize" ||
        name == "cudaEventSynchronize") {
      h.time_ns = view.value(h.node, sync_time);
      h.calls = view.value(h.node, sync_calls);
    } else if (name.starts_with("memcpy")) {
      h.copy = true;
      h.pageable = name.ends_with("(pageable)");
      h.device_to_host = name.starts_with("memcpy DtoH");
      h.time_ns = view.value(h.node, copy_time);
      h.calls = view.value(h.node, copy_calls);
      h.bytes = view.value(h.node, copy_bytes);
      if (!(h.bytes >= 0)) h.bytes = 0;  // absent: none recorded
    } else {
      continue;
    }
    if (!(h.time_ns > 0) || !(h.calls > 0)) continue;
    out.push_back(std::move(h));
  }
  return out;
}

bool reads_back(const HostCallNode& n) {
  return n.copy && n.device_to_host && n.bytes < kSmallCopyBytes * n.calls;
}

}  // namespace proton::analysis
