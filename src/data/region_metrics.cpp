#include "data/region_metrics.h"

#include "common/name_table.h"

namespace proton {

void add_region_totals(CallTree& tree, CallTree::NodeId kernel,
                       std::span<const RegionTotals> regions, uint64_t units, uint32_t device_id,
                       DeviceType type) {
  // Interned once per process; the tree stores ids.
  static const NameId kCycles = NameTable::global().intern("cycles");
  static const NameId kCount = NameTable::global().intern("count");
  static const NameId kNormalized = NameTable::global().intern("normalized_cycles");
  static const NameId kMeanWarp = NameTable::global().intern("mean_warp_cycles");
  static const NameId kMaxWarp = NameTable::global().intern("max_warp_cycles");
  const double per_unit = units > 0 ? 1.0 / static_cast<double>(units) : 0.0;
  for (const RegionTotals& r : regions) {
    if (r.path.empty()) continue;
    CallTree::NodeId node = kernel;
    for (NameId name : r.path)
      node = tree.child(node, name);
    tree.add_metric(node, kCycles, static_cast<int64_t>(r.cycles));
    tree.add_metric(node, kCount, static_cast<int64_t>(r.count));
    tree.add_metric(node, kNormalized, static_cast<double>(r.cycles) * per_unit);
    // Older decoders (and hand-made totals) leave the spread out: no metric rather than a 0.
    if (r.units > 0 && r.ctas > 0) {
      tree.add_metric(node, kMeanWarp,
                      static_cast<double>(r.cycles) / static_cast<double>(r.units));
      tree.add_metric(node, kMaxWarp,
                      static_cast<double>(r.slowest_unit_cycles) / static_cast<double>(r.ctas));
    }
    tree.mark_cycles(node, device_id, type);
  }
}

}  // namespace proton
