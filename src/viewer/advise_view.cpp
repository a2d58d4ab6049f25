#include "viewer/advise_view.h"

#include <cmath>

#include "analysis/advise.h"
#include "viewer/peak_table.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {

analysis::ProfileView analysis_view(const Profile& profile, const NameOptions& names) {
  analysis::ProfileView view;
  view.metrics.reserve(profile.metrics.size());
  for (const MetricInfo& m : profile.metrics)
    view.metrics.push_back(m.name);
  view.nodes.reserve(profile.nodes.size());
  for (const Node& n : profile.nodes) {
    analysis::ViewNode v;
    v.name = terminal_safe(display_name(n.name, names));
    v.parent = n.parent;
    v.children = n.children;
    v.device_id = std::string(n.text_of("device_id"));
    v.device_type = std::string(n.text_of("device_type"));
    for (const auto& [key, text] : n.text) {
      if (key != "device_id" && key != "device_type") v.texts.emplace_back(key, text);
    }
    v.values.reserve(n.values.size());
    for (const MetricValue& m : n.values) {
      // The reader's "absent" and a stored NaN both mean "nothing to act on" to the rules.
      v.values.emplace_back(m.metric, is_absent(m.value) ? analysis::kNoValue : m.value);
    }
    view.nodes.push_back(std::move(v));
  }
  for (const DeviceInfo& d : profile.devices) {
    analysis::ViewDevice v;
    v.type = d.type;
    v.id = d.id;
    v.arch = d.arch;
    v.num_sms = d.num_sms;
    v.warp_size = d.warp_size;
    // Files that give threads but not warps (or the reverse) still give the warps.
    v.max_warps_per_sm = d.max_warps_per_sm > 0 ? d.max_warps_per_sm
                         : d.warp_size > 0      ? d.max_threads_per_sm / d.warp_size
                                                : 0;
    v.max_blocks_per_sm = d.max_blocks_per_sm;
    v.registers_per_sm = d.registers_per_sm;
    v.shared_memory_per_sm = d.shared_memory_per_sm;
    v.reserved_shared_memory_per_block = d.reserved_shared_memory_per_block;
    int slot = 0;
    for (int width : {8, 16, 32, 64}) {
      if (auto peak = peak_for(d, width)) {
        v.peak_flops_per_s[static_cast<size_t>(slot)] = peak->flops_per_s;
        v.peak_bytes_per_s = peak->bytes_per_s;
      }
      ++slot;
    }
    view.devices.push_back(std::move(v));
  }
  view.rank = profile.run.rank;
  view.world_size = profile.run.world_size;
  return view;
}

std::string advise_report(Profile profile, const std::string& title, bool json, size_t top,
                          const NameOptions& names) {
  auto findings = analysis::advise(analysis_view(hide_metadata(std::move(profile)), names));
  return json ? analysis::findings_json(findings)
              : analysis::findings_text(findings, terminal_safe(title), top);
}

}  // namespace proton::viewer
