// How hardware-counter values land on the call tree and combine up it.
//
// A counter value belongs to one kernel launch. Two rules cover CUPTI's metric names:
//   sum            ".sum" metrics are totals (bytes, instructions, cycles): a node holds the
//                  sum over its launches and its subtree, like kernel time.
//   time-weighted  everything else (".pct", ".ratio", ".avg", ".per_second", ...) is a rate or
//                  an average over the kernel's lifetime: a node's value is the average of its
//                  launches weighted by their duration, so a 1 ms GEMM at 90% and a 1 us kernel
//                  at 10% make ~90%, not 50%.
// Hatchet files are summed by every reader (Hatchet, triton.profiler's viewer, ours), so a
// time-weighted metric is stored as its numerator, "<name> (ns-weighted)" = value x duration,
// next to "counter time (ns)", the duration of the launches that have counter values. A
// reader divides the two after summing (the viewer does; rollup_counters() shows how).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "data/call_tree.h"

namespace proton {

enum class CounterRule : uint8_t { kSum, kTimeWeighted };

/// The rule for a CUPTI metric name (see above).
CounterRule counter_rule(std::string_view metric);

inline constexpr std::string_view kCounterTimeMetric = "counter time (ns)";
inline constexpr std::string_view kWeightedSuffix = " (ns-weighted)";
/// PM-sampling averages per kernel (names "pm:<metric>") have their own time column, so a
/// kernel with both kinds keeps each average right.
inline constexpr std::string_view kPmPrefix = "pm:";
inline constexpr std::string_view kPmCounterTimeMetric = "pm:counter time (ns)";
/// The time column a weighted metric ("<name> (ns-weighted)") is divided by.
std::string_view counter_time_metric_for(std::string_view metric);

/// The metrics of one counters run, in the order the backend reports values; interned once.
class CounterSchema {
 public:
  CounterSchema() = default;
  explicit CounterSchema(std::vector<std::string> names,
                         std::string_view time_metric = kCounterTimeMetric);

  size_t size() const { return names_.size(); }
  const std::vector<std::string>& names() const { return names_; }
  CounterRule rule(size_t i) const { return rules_[i]; }
  /// The tree metric that metric i is stored as (the name, or its weighted numerator).
  NameId tree_metric(size_t i) const { return tree_ids_[i]; }
  NameId time_metric() const { return time_id_; }

 private:
  std::vector<std::string> names_;
  std::vector<CounterRule> rules_;
  std::vector<NameId> tree_ids_;
  NameId time_id_ = kNoName;
};

/// Adds one launch's values (schema order; NaN = not measured, skipped) to `node`.
/// `duration_ns` weighs the time-weighted metrics. Never throws for a type clash: a metric of
/// the same name already stored with another type is skipped and counted in the return value.
size_t attach_counters(CallTree& tree, CallTree::NodeId node, uint64_t duration_ns,
                       const CounterSchema& schema, std::span<const double> values);

/// Inclusive per-node values of every schema metric (node id x metric, NaN where a node's
/// subtree has no value): sums for kSum, weighted averages for kTimeWeighted.
std::vector<std::vector<double>> rollup_counters(const CallTree& tree, const CounterSchema& schema);

}  // namespace proton
