#include "data/counter_rules.h"

#include <cmath>
#include <limits>

#include "common/name_table.h"

namespace proton {

namespace {

double as_double(const MetricValue& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

CounterRule counter_rule(std::string_view metric) {
  // ".sum" alone is a total; ".sum.per_second" or ".sum.pct_of_peak..." are rates.
  return metric.ends_with(".sum") ? CounterRule::kSum : CounterRule::kTimeWeighted;
}

std::string_view counter_time_metric_for(std::string_view metric) {
  return metric.substr(0, kPmPrefix.size()) == kPmPrefix ? kPmCounterTimeMetric
                                                         : kCounterTimeMetric;
}

CounterSchema::CounterSchema(std::vector<std::string> names, std::string_view time_metric)
    : names_(std::move(names)) {
  auto& table = NameTable::global();
  for (const std::string& n : names_) {
    CounterRule r = counter_rule(n);
    rules_.push_back(r);
    if (r == CounterRule::kSum) {
      tree_ids_.push_back(table.intern(n));
      continue;
    }
    // Appended in place: GCC 12 at -O3 flags `n + suffix` as an overlapping memcpy (-Wrestrict
    // false positive, GCC PR 105329), which -Werror turns into a failed package build.
    std::string weighted;
    weighted.reserve(n.size() + kWeightedSuffix.size());
    weighted.append(n).append(kWeightedSuffix);
    tree_ids_.push_back(table.intern(weighted));
  }
  time_id_ = table.intern(time_metric);
}

size_t attach_counters(CallTree& tree, CallTree::NodeId node, uint64_t duration_ns,
                       const CounterSchema& schema, std::span<const double> values) {
  size_t skipped = 0;
  bool any_weighted = false;
  for (size_t i = 0; i < schema.size() && i < values.size(); ++i) {
    double v = values[i];
    if (!std::isfinite(v)) continue;
    double stored = v;
    if (schema.rule(i) == CounterRule::kTimeWeighted) {
      stored = v * static_cast<double>(duration_ns);
      any_weighted = true;
    }
    try {
      tree.add_metric(node, schema.tree_metric(i), MetricValue{stored});
    } catch (const MetricTypeError&) {
      ++skipped;
    }
  }
  if (any_weighted) {
    try {
      tree.add_metric(node, schema.time_metric(), MetricValue{static_cast<int64_t>(duration_ns)});
    } catch (const MetricTypeError&) {
      ++skipped;
    }
  }
  return skipped;
}

std::vector<std::vector<double>> rollup_counters(const CallTree& tree,
                                                 const CounterSchema& schema) {
  const size_t n = tree.size();
  const size_t m = schema.size();
  std::vector<std::vector<double>> sum(n, std::vector<double>(m, 0.0));
  std::vector<std::vector<bool>> seen(n, std::vector<bool>(m, false));
  std::vector<double> time(n, 0.0);
  for (CallTree::NodeId id = 0; id < n; ++id) {
    for (const auto& [metric, value] : tree.node(id).metrics) {
      if (metric == schema.time_metric()) time[id] += as_double(value);
      for (size_t i = 0; i < m; ++i) {
        if (metric != schema.tree_metric(i)) continue;
        sum[id][i] += as_double(value);
        seen[id][i] = true;
      }
    }
  }
  // Children are created after their parents, so a reverse walk folds every subtree into its
  // root in one pass.
  for (CallTree::NodeId id = static_cast<CallTree::NodeId>(n); id-- > 1;) {
    CallTree::NodeId p = tree.node(id).parent;
    time[p] += time[id];
    for (size_t i = 0; i < m; ++i) {
      sum[p][i] += sum[id][i];
      seen[p][i] = seen[p][i] || seen[id][i];
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (CallTree::NodeId id = 0; id < n; ++id) {
    for (size_t i = 0; i < m; ++i) {
      if (!seen[id][i]) {
        sum[id][i] = nan;
      } else if (schema.rule(i) == CounterRule::kTimeWeighted) {
        sum[id][i] = time[id] > 0 ? sum[id][i] / time[id] : nan;
      }
    }
  }
  return sum;
}

}  // namespace proton
