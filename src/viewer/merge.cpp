#include "viewer/merge.h"

#include <cmath>
#include <map>

#include "viewer/align.h"
#include "viewer/derived_metrics.h"

namespace proton::viewer {

namespace {}  // namespace

std::string merge_stat_name(std::string_view metric, std::string_view stat, MetricKind kind) {
  std::string_view core = trim(metric);
  // The tag, when the name has one: a kind a file declared ("metric_rules") names no tag.
  if (kind != MetricKind::kInclusive && metric_kind_of(core) == kind)
    core = trim(core.substr(0, core.size() - 5));
  auto open = core.find('(');
  std::string_view base = trim(core.substr(0, open));
  // Built by append: GCC 12 at -O3 reports a false -Wrestrict on `" " + std::string(...)`.
  std::string name(base);
  name.append(":").append(stat);
  if (open != std::string_view::npos && stat != "argmax" && stat != "imbalance")
    name.append(" ").append(core.substr(open));
  name += stat == "argmax" ? " (pty)" : " (exc)";
  return name;
}

Profile merge_profiles(const std::vector<const Profile*>& inputs) {
  Alignment aligned = align_profiles(inputs);
  Profile out = std::move(aligned.tree);
  size_t n = inputs.size();
  size_t nodes = out.nodes.size();

  // Metric names across inputs, in first-seen order.
  std::vector<std::pair<std::string, MetricKind>> names;
  std::map<std::string, size_t, std::less<>> seen;
  for (const Profile* p : inputs) {
    for (const MetricInfo& m : p->metrics) {
      if (seen.emplace(m.name, names.size()).second) names.emplace_back(m.name, m.kind);
    }
  }

  for (const auto& [name, kind] : names) {
    std::vector<std::vector<double>> stored(n), rolled(n);
    bool integral = true;
    for (size_t k = 0; k < n; ++k) {
      int32_t m = inputs[k]->find_metric(name);
      if (m < 0) continue;
      integral &= inputs[k]->metrics[static_cast<size_t>(m)].integral;
      stored[k] = inputs[k]->stored(m);
      rolled[k] = inputs[k]->inclusive(m);
    }
    int32_t sum_id = out.metric_id(name);
    out.metrics[static_cast<size_t>(sum_id)].integral = integral;
    out.metrics[static_cast<size_t>(sum_id)].kind = kind;  // declared kinds too
    if (kind == MetricKind::kProperty) {
      PropertyFold fold = property_fold(name);
      for (size_t i = 0; i < nodes; ++i) {
        double value = kAbsent;
        for (size_t k = 0; k < n; ++k) {
          int32_t src = aligned.sources[i][k];
          if (src < 0 || stored[k].empty() || is_absent(stored[k][static_cast<size_t>(src)]))
            continue;
          double v = stored[k][static_cast<size_t>(src)];
          if (folds_in(fold, value, v)) value = v;
          if (fold == PropertyFold::kFirst) break;
        }
        if (!is_absent(value)) out.add_value(static_cast<int32_t>(i), sum_id, value);
      }
      continue;
    }
    int32_t mean_id = out.metric_id(merge_stat_name(name, "mean", kind));
    int32_t min_id = out.metric_id(merge_stat_name(name, "min", kind));
    int32_t max_id = out.metric_id(merge_stat_name(name, "max", kind));
    int32_t argmax_id = out.metric_id(merge_stat_name(name, "argmax", kind));
    out.metrics[static_cast<size_t>(mean_id)].integral = false;
    out.metrics[static_cast<size_t>(min_id)].integral = integral;
    out.metrics[static_cast<size_t>(max_id)].integral = integral;
    for (size_t i = 0; i < nodes; ++i) {
      double sum = 0, total = 0, low = INFINITY, high = -INFINITY;
      size_t arg = 0;
      bool any_stored = false, any_value = false;
      for (size_t k = 0; k < n; ++k) {
        int32_t src = aligned.sources[i][k];
        double own = src < 0 || stored[k].empty() ? kAbsent : stored[k][static_cast<size_t>(src)];
        double inc = src < 0 || rolled[k].empty() ? kAbsent : rolled[k][static_cast<size_t>(src)];
        if (!is_absent(own)) {
          sum += own;
          any_stored = true;
        }
        any_value |= !is_absent(inc);
        double v = is_absent(inc) ? 0 : inc;
        total += v;
        low = std::min(low, v);
        if (v > high) {
          high = v;
          arg = k;
        }
      }
      auto node = static_cast<int32_t>(i);
      if (any_stored) out.add_value(node, sum_id, sum);
      if (!any_value) continue;
      out.add_value(node, mean_id, total / static_cast<double>(n));
      out.add_value(node, min_id, low);
      out.add_value(node, max_id, high);
      out.add_value(node, argmax_id, static_cast<double>(arg));
    }
  }

  for (const Profile* p : inputs) {
    for (const DeviceInfo& d : p->devices) {
      if (out.device(d.type, d.id) == nullptr) out.devices.push_back(d);
    }
  }
  return out;
}

}  // namespace proton::viewer
