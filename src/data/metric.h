// Metric values and the rules that combine them.
//
// Names carry the semantics, as in triton.profiler:
//   "<name> (exc)" or "<name>(exc)"  exclusive: summed on the node, never rolled up into parents
//   "<name> (pty)" or "<name>(pty)"  a property: each new value overwrites the old one
//   anything else                    summed
// The suffix only chooses the rule: the name written to a profile is the one Triton writes, the
// suffix removed (metric_output_name); the writer records the rule beside the tree so that our
// viewer keeps such metrics exclusive. String values (a dtype, a config name) are properties
// whatever their name: each new value replaces the old one, as in triton.profiler.
// "flops*" metrics are stored as floats and "bytes" as an int, whatever the caller passed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/metric_value.h"

namespace proton {

enum class MetricType : uint8_t { kInt, kFloat, kIntVector, kFloatVector, kString };
enum class MetricRule : uint8_t { kSum, kExclusive, kProperty };

const char* metric_type_name(MetricType t);
inline MetricType metric_type(const MetricValue& v) {
  return static_cast<MetricType>(v.index());
}

/// The rule encoded in a metric's name.
MetricRule metric_rule(std::string_view name);

/// The name written to a profile: `name` without a trailing "(exc)" / "(pty)" and the spaces
/// before it, as triton.profiler writes it.
std::string_view metric_output_name(std::string_view name);

/// Applies the name-based type coercions ("flops*" -> float, "bytes" -> int).
MetricValue coerce_metric(std::string_view name, MetricValue value);

/// Folds `incoming` into `current` following `rule`. Both must have the same type
/// (callers check, see CallTree::add_metric). Vectors combine element-wise; a longer
/// incoming vector extends the stored one.
void combine_metric(MetricRule rule, MetricValue& current, const MetricValue& incoming);

}  // namespace proton
