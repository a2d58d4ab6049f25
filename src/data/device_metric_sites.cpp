#include "data/device_metric_sites.h"

#include <variant>

#include "common/name_table.h"
#include "data/metric.h"

namespace proton {

void DeviceMetricSites::note(uint32_t slot, uint32_t phase, CallTree::NodeId node) {
  std::vector<Site>& sites = sites_[slot];
  for (Site& s : sites) {
    if (s.phase == phase && s.node == node) {
      ++s.launches;
      ++s.recent;
      return;
    }
  }
  sites.push_back({phase, node, 1, 1});
}

bool DeviceMetricSites::place(uint32_t slot, NameId metric, const MetricValue& value,
                              const TreeOf& tree_of) {
  auto it = sites_.find(slot);
  if (it == sites_.end() || it->second.empty()) return false;
  std::vector<Site>& sites = it->second;
  // Weights: the launches since the last read-back, which added what is placed now; all
  // launches when none came since (a value read back late).
  uint64_t recent = 0;
  for (const Site& s : sites)
    recent += s.recent;
  auto weight = [&](const Site& s) { return recent != 0 ? s.recent : s.launches; };
  uint64_t total = 0;
  size_t largest = 0;
  for (size_t i = 0; i < sites.size(); ++i) {
    total += weight(sites[i]);
    if (weight(sites[i]) > weight(sites[largest])) largest = i;
  }
  bool whole =
      sites.size() == 1 || metric_rule(NameTable::global().name(metric)) == MetricRule::kProperty;
  std::vector<MetricValue> parts(sites.size(), value);
  if (!whole) {
    if (const auto* n = std::get_if<int64_t>(&value)) {
      // Integer shares, the remainder to the node with the most launches: the sum is exact.
      int64_t given = 0;
      for (size_t i = 0; i < sites.size(); ++i) {
        auto share = static_cast<int64_t>(static_cast<long double>(*n) *
                                          static_cast<long double>(weight(sites[i])) /
                                          static_cast<long double>(total));
        parts[i] = share;
        given += share;
      }
      parts[largest] = std::get<int64_t>(parts[largest]) + (*n - given);
    } else if (const auto* d = std::get_if<double>(&value)) {
      for (size_t i = 0; i < sites.size(); ++i) {
        parts[i] = *d * static_cast<double>(weight(sites[i])) / static_cast<double>(total);
      }
    }
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    const Site& s = sites[i];
    if (!whole && weight(s) == 0 && i != largest) continue;
    if (CallTree* tree = tree_of(s.phase)) tree->add_metric(s.node, metric, parts[i]);
  }
  for (Site& s : sites)
    s.recent = 0;
  return true;
}

void DeviceMetricSites::forget_phases(uint32_t phase, bool up_to) {
  for (auto& [slot, sites] : sites_) {
    std::erase_if(sites,
                  [&](const Site& s) { return up_to ? s.phase <= phase : s.phase == phase; });
  }
}

}  // namespace proton
