// autotune_spread: sibling kernels of one family (as variant_spread groups them: the name up to
// its first '[' or space) whose compiled kernels carry their config (triton_config), named by
// that config: the best and the worst one, compared per unit of declared work (FLOPs, else
// bytes) or, where no work is declared, per launch when every variant ran the same grid (then
// each launch did the same work). A worst config kAutotuneSpread or more slower than the best is
// one the autotuner should not pick for this shape, or should not try at all.
#include <array>
#include <cmath>
#include <map>
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/kernel_facts.h"

namespace proton::analysis {

namespace {

struct ConfigVariant {
  int32_t node;
  double time;
  double work;  // FLOPs, bytes or launches
  std::string config;
};

double grid_of(const ProfileView& view, int32_t node, const std::array<int32_t, 3>& ids) {
  double blocks = 1;
  for (int32_t id : ids) {
    double v = view.value(node, id);
    if (!(v > 0)) return kNoValue;
    blocks *= v;
  }
  return blocks;
}

}  // namespace

std::vector<Finding> autotune_spread(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  if (time < 0 || view.nodes.empty()) return {};
  int32_t count_id = view.find_metric("count");
  std::vector<int32_t> flops_ids;
  for (const char* w : {"flops8", "flops16", "flops32", "flops64"})
    flops_ids.push_back(view.find_metric(w));
  int32_t bytes_id = view.find_metric("bytes");
  std::array<int32_t, 3> grid_ids{view.find_metric("grid_x"), view.find_metric("grid_y"),
                                  view.find_metric("grid_z")};
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (const ViewNode& parent : view.nodes) {
    // Per family, the configured variants measured three ways: FLOPs, bytes, launches.
    struct Family {
      std::vector<ConfigVariant> by_flops, by_bytes, by_launch;
      std::vector<double> grids;
    };
    std::map<std::string, Family> families;
    for (int32_t c : parent.children) {
      const ViewNode& n = view.nodes[static_cast<size_t>(c)];
      std::string_view config = view.text(c, format::kernel_facts::kConfig);
      double t = view.value(c, time);
      if (!n.is_kernel() || config.empty() || !(t > 0)) continue;
      Family& fam = families[kernel_family(n.name)];
      double flops = 0;
      for (int32_t id : flops_ids) {
        double v = view.value(c, id);
        if (v > 0) flops += v;
      }
      double bytes = view.value(c, bytes_id);
      double launches = view.value(c, count_id);
      if (flops > 0) fam.by_flops.push_back({c, t, flops, std::string(config)});
      if (bytes > 0) fam.by_bytes.push_back({c, t, bytes, std::string(config)});
      if (launches > 0) fam.by_launch.push_back({c, t, launches, std::string(config)});
      fam.grids.push_back(grid_of(view, c, grid_ids));
    }
    for (auto& [family, fam] : families) {
      bool one_grid = fam.grids.size() >= 2 && !std::isnan(fam.grids[0]);
      for (double g : fam.grids)
        one_grid = one_grid && g == fam.grids[0];
      // The first measure every variant has: FLOPs, else bytes, else launches of one grid.
      size_t n = fam.grids.size();
      const std::vector<ConfigVariant>* variants = nullptr;
      const char* unit = nullptr;
      if (fam.by_flops.size() == n) {
        variants = &fam.by_flops, unit = "FLOP";
      } else if (fam.by_bytes.size() == n) {
        variants = &fam.by_bytes, unit = "byte";
      } else if (one_grid && fam.by_launch.size() == n) {
        variants = &fam.by_launch, unit = "launch";
      }
      if (variants == nullptr || variants->size() < 2) continue;
      const ConfigVariant* best = &(*variants)[0];
      const ConfigVariant* worst = best;
      for (const ConfigVariant& v : *variants) {
        if (v.time / v.work < best->time / best->work) best = &v;
        if (v.time / v.work > worst->time / worst->work) worst = &v;
      }
      if (best->config == worst->config) continue;
      double best_cost = best->time / best->work;
      double spread = worst->time / worst->work / best_cost;
      if (!(spread >= kAutotuneSpread)) continue;
      Finding f = finding_at(view, "autotune_spread", worst->node);
      f.word("family", family)
          .word("unit", unit)
          .word("worst_config", worst->config)
          .word("best_config", best->config)
          .number("ns_per_unit", worst->time / worst->work)
          .number("best_ns_per_unit", best_cost)
          .number("spread", spread)
          .number("configs", static_cast<double>(variants->size()))
          .number("time_ns", worst->time);
      f.saving_ns = worst->time - worst->work * best_cost;
      f.severity = severity_for(*f.saving_ns, total);
      f.seen = "Config '" + worst->config + "' of '" + family + "' takes " + fixed(spread, 2) +
               "x the time per " + unit + " of config '" + best->config + "' (" +
               count(static_cast<double>(variants->size())) + " configs compared).";
      f.why =
          "Run at the best config's rate its work would take " + duration(*f.saving_ns) + " less.";
      f.suggestion = "Drop '" + worst->config +
                     "' from the autotune configs (or prune it with "
                     "prune_configs_by / early_config_prune), pin '" +
                     best->config +
                     "' for this shape, or add the argument that tells the shapes apart to the "
                     "autotune key so each shape gets its own best config.";
      found.push_back(std::move(f));
    }
  }
  return found;
}

}  // namespace proton::analysis
