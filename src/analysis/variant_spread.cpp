// variant_spread: sibling kernels of one family (the same name up to its first '[' or space:
// "matmul[BLOCK_M=64]" and "matmul[BLOCK_M=128]", as a launch_metadata name carries a config or
// shape) compared per unit of declared work. A variant much slower per FLOP (or per byte when
// no FLOPs are declared) than its best sibling is a config to drop or a shape to pad. Variants
// whose compiled kernel carries its config (triton_config) are left to autotune_spread.
#include <map>
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/kernel_facts.h"

namespace proton::analysis {

namespace {

struct Variant {
  int32_t node;
  double time;
  double work;
};

}  // namespace

std::vector<Finding> variant_spread(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  if (time < 0) return {};
  std::vector<int32_t> flops_ids;
  for (const char* w : {"flops8", "flops16", "flops32", "flops64"})
    flops_ids.push_back(view.find_metric(w));
  int32_t bytes_id = view.find_metric("bytes");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (const ViewNode& parent : view.nodes) {
    // Per family: the variants declaring FLOPs and, apart, those declaring bytes only.
    std::map<std::string, std::pair<std::vector<Variant>, std::vector<Variant>>> families;
    for (int32_t c : parent.children) {
      const ViewNode& n = view.nodes[static_cast<size_t>(c)];
      double t = view.value(c, time);
      // Variants whose compiled kernel names its config are autotune_spread's.
      if (!n.is_kernel() || !(t > 0) || !view.text(c, format::kernel_facts::kConfig).empty())
        continue;
      double flops = 0;
      for (int32_t id : flops_ids) {
        double v = view.value(c, id);
        if (v > 0) flops += v;
      }
      double bytes = view.value(c, bytes_id);
      auto& slot = families[kernel_family(n.name)];
      if (flops > 0) {
        slot.first.push_back({c, t, flops});
      } else if (bytes > 0) {
        slot.second.push_back({c, t, bytes});
      }
    }
    for (auto& [family, lists] : families) {
      for (int per_flop = 1; per_flop >= 0; --per_flop) {
        const std::vector<Variant>& variants = per_flop ? lists.first : lists.second;
        if (variants.size() < 2) continue;
        const Variant* best = &variants[0];
        for (const Variant& v : variants) {
          if (v.time / v.work < best->time / best->work) best = &v;
        }
        double best_cost = best->time / best->work;
        for (const Variant& v : variants) {
          double spread = v.time / v.work / best_cost;
          if (&v == best || spread < kVariantSpread) continue;
          Finding f = finding_at(view, "variant_spread", v.node);
          const char* unit = per_flop ? "FLOP" : "byte";
          f.word("family", family)
              .word("unit", unit)
              .word("best_variant", view.nodes[static_cast<size_t>(best->node)].name)
              .number("ns_per_unit", v.time / v.work)
              .number("best_ns_per_unit", best_cost)
              .number("spread", spread)
              .number("time_ns", v.time);
          f.saving_ns = v.time - v.work * best_cost;
          f.severity = severity_for(*f.saving_ns, total);
          f.seen = "This variant of '" + family + "' takes " + fixed(spread, 2) +
                   "x the time per " + unit + " of its sibling '" +
                   view.nodes[static_cast<size_t>(best->node)].name + "'.";
          f.why =
              "At its best sibling's rate its work would take " + duration(*f.saving_ns) + " less.";
          f.suggestion =
              "If these are autotune configs or shapes of one kernel, prefer the faster config "
              "for this shape (prune the autotune space, set the key so this shape retunes), or "
              "pad the shape to one that runs at the better rate.";
          found.push_back(std::move(f));
        }
      }
    }
  }
  return found;
}

}  // namespace proton::analysis
