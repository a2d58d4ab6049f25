#include "viewer/stragglers.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "analysis/rank_stats.h"
#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/text_render.h"

namespace proton::viewer {

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

// "ROOT > step > all_reduce", outermost first, without the root.
std::string path_of(const Profile& p, size_t node, const NameOptions& names) {
  std::vector<std::string> parts;
  for (auto i = static_cast<int32_t>(node); i > 0; i = p.nodes[static_cast<size_t>(i)].parent)
    parts.push_back(terminal_safe(display_name(p.nodes[static_cast<size_t>(i)].name, names)));
  if (parts.empty()) return terminal_safe(p.nodes[0].name) + " (whole run)";
  std::string out;
  for (size_t k = parts.size(); k-- > 0;)
    out += parts[k] + (k ? " > " : "");
  return out;
}

}  // namespace

void render_stragglers(std::ostream& out, const RankMerger& merger, const Profile& merged,
                       const StragglerOptions& options) {
  if (!merger.tracks_presence()) throw UsageError("--stragglers: the merge kept no presence");
  int32_t sum_id = match_metric(merged, options.metric);
  if (sum_id < 0 || merged.metrics[static_cast<size_t>(sum_id)].kind != MetricKind::kInclusive) {
    throw UsageError("--stragglers: no summed metric '" + options.metric +
                     "' in the merged profile (see --list)");
  }
  const std::string& name = merged.metrics[static_cast<size_t>(sum_id)].name;
  auto column = [&](const char* stat) {
    int32_t id = merged.find_metric(analysis::rank_stat_metric(name, stat));
    return id < 0 ? std::vector<double>(merged.nodes.size(), kAbsent) : merged.stored(id);
  };
  std::vector<double> total = merged.inclusive(sum_id);
  std::vector<double> high = column("max");
  std::vector<double> arg = column("argmax");
  std::vector<double> imbalance = column("imbalance");
  size_t inputs = merger.size();
  double root = is_absent(total[0]) ? 0 : total[0];

  struct Row {
    size_t node;
    double imbalance, mean, max;
    int64_t rank;
    std::vector<int64_t> missing;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < merged.nodes.size(); ++i) {
    if (std::isnan(imbalance[i]) || std::isnan(total[i]) || total[i] < options.min_share * root)
      continue;
    Row r{i, imbalance[i], 0, high[i], static_cast<int64_t>(arg[i]), {}};
    for (size_t k = 0; k < inputs; ++k) {
      if (!merger.has(i, k)) r.missing.push_back(merger.ranks()[k]);
    }
    size_t present = inputs - r.missing.size();
    r.mean = present ? total[i] / static_cast<double>(present) : 0;
    rows.push_back(std::move(r));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.imbalance != b.imbalance ? a.imbalance > b.imbalance : a.max > b.max;
  });
  if (rows.size() > options.top) rows.resize(options.top);

  out << "Stragglers by " << terminal_safe(name) << " over " << inputs
      << " ranks: frames where the slowest rank is furthest above the mean of the ranks that ran "
         "them (imbalance = max / mean; frames under "
      << fixed(options.min_share * 100, 1) << "% of the total skipped)\n";
  // Times read best in ms; other metrics are shown in their own unit.
  bool ns = name.find("(ns)") != std::string::npos;
  double scale = ns ? 1e-6 : 1;
  std::string unit = ns ? " (ms)" : "";
  out << std::right << std::setw(10) << "imbalance" << std::setw(16) << "mean" + unit
      << std::setw(16) << "max" + unit << std::setw(9) << "max rank"
      << "  missing ranks  frame\n";
  std::map<int64_t, int> slowest;
  for (const Row& r : rows) {
    bool integral = merged.metrics[static_cast<size_t>(sum_id)].integral;
    std::string missing = r.missing.empty() ? "-" : rank_ranges(r.missing);
    out << std::setw(10) << fixed(r.imbalance, 2) << std::setw(16)
        << format_value(r.mean * scale, false) << std::setw(16)
        << format_value(r.max * scale, integral && !ns) << std::setw(9) << r.rank << "  "
        << std::left << std::setw(13) << missing << "  " << std::right
        << path_of(merged, r.node, options.names) << "\n";
    if (r.imbalance > 1) ++slowest[r.rank];
  }
  if (rows.empty()) {
    out << "  (no frame above the threshold)\n";
    return;
  }
  std::vector<std::pair<int64_t, int>> by_count(slowest.begin(), slowest.end());
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "Slowest rank per frame above:";
  if (by_count.empty()) out << " none (every frame is balanced)";
  for (size_t k = 0; k < by_count.size() && k < 8; ++k) {
    out << (k ? ", " : " ") << "rank " << by_count[k].first << " in " << by_count[k].second;
  }
  out << "\n";
}

}  // namespace proton::viewer
