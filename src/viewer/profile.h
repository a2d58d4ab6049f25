// The viewer's in-memory profile: a call tree whose nodes carry the metric values exactly as the
// Hatchet file stored them (exclusive per node). Inclusive values and derived metrics are
// computed on demand as dense columns, so a file with thousands of distinct metric names costs
// memory proportional to its size, not to nodes x metrics.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/hatchet_reader.h"

namespace proton::viewer {

// How a metric combines along the tree, decided by its name as Triton's Proton does.
enum class MetricKind : uint8_t {
  kInclusive,  // plain name: node value is exclusive, inclusive = node + children
  kExclusive,  // name ends with "(exc)": never rolled up into parents
  kProperty,   // name ends with "(pty)": shown as stored, not summed
};

MetricKind metric_kind_of(std::string_view name);

// How a merge of several profiles folds a property's values on one node: the first input's
// value, except for extrema the writer names so ("time_min (ns)", "time_max (ns)": the shortest
// and longest launch), which fold to the smallest and largest over the inputs.
enum class PropertyFold : uint8_t { kFirst, kMin, kMax };
PropertyFold property_fold(std::string_view name);
/// Whether `value` replaces `kept`, the value folded so far, under `fold` (a first value always
/// goes in: `kept` is then absent).
bool folds_in(PropertyFold fold, double kept, double value);

struct MetricInfo {
  std::string name;
  MetricKind kind = MetricKind::kInclusive;
  bool integral = true;     // every stored value was a JSON integer
  bool from_array = false;  // some node stored an array; the viewer shows its sum
};

struct MetricValue {
  int32_t metric = 0;
  double value = 0;
};

struct Node {
  std::string name;
  std::string type;
  int32_t parent = -1;
  std::vector<int32_t> children;
  std::vector<MetricValue> values;                        // exclusive, as stored
  std::vector<std::pair<std::string, std::string>> text;  // string metrics: device_id, ...

  // Returns the string metric `key`, or an empty view.
  std::string_view text_of(std::string_view key) const;
  bool is_kernel() const { return !text_of("device_id").empty(); }
};

// A device of the device map, and the rank block of a multi-process run (rank < 0 when the file
// has none), as the Hatchet reader reports them.
using DeviceInfo = format::HatchetDevice;
using RunMeta = format::HatchetRun;

// "No value here": a NaN whose payload no arithmetic or parser produces, so that a metric whose
// value is NaN (read from a file) stays a value: it is shown as "nan" and propagates into sums,
// while absent values are skipped. Test with is_absent, never std::isnan. Arithmetic on kAbsent
// keeps its payload on the hosts we build for (x86-64, AArch64), so "absent / x" stays absent.
inline constexpr uint64_t kAbsentBits = 0x7ff80000ab5e0001ull;
inline constexpr double kAbsent = std::bit_cast<double>(kAbsentBits);
inline bool is_absent(double v) {
  return std::bit_cast<uint64_t>(v) == kAbsentBits;
}

// Invariant kept by every producer (reader, filters, diff, merge): a parent's index is smaller
// than its children's, so one reverse sweep over the nodes is a post-order walk.
class Profile {
 public:
  std::vector<Node> nodes;  // nodes[0] is the root
  std::vector<MetricInfo> metrics;
  std::vector<DeviceInfo> devices;
  RunMeta run;

  int32_t add_node(int32_t parent, std::string name, std::string type = "function");
  // Finds or registers a metric by exact name.
  int32_t metric_id(std::string_view name);
  // -1 when the profile has no metric of that exact name.
  int32_t find_metric(std::string_view name) const;
  // The kind a file declares for a metric (Proton's root "metric_rules": names written without
  // their "(exc)"/"(pty)" suffix); applies to the metric now and when it is first seen later.
  void declare_kind(std::string_view name, MetricKind kind);
  // Adds `value` to the node's stored value of `metric` (a repeated key sums, as Hatchet does).
  void add_value(int32_t node, int32_t metric, double value);

  // Stored values of one metric, kAbsent where a node has none.
  std::vector<double> stored(int32_t metric) const;
  // Inclusive values for kInclusive metrics, stored values for the other kinds. A node whose
  // whole subtree lacks the metric stays kAbsent.
  std::vector<double> inclusive(int32_t metric) const;

  const DeviceInfo* device(std::string_view type, std::string_view id) const;

 private:
  std::map<std::string, int32_t, std::less<>> metric_ids_;
  std::map<std::string, MetricKind, std::less<>> declared_kinds_;
};

// Sums a column bottom-up over the tree (absent + absent stays absent).
std::vector<double> roll_up(const Profile& profile, std::vector<double> column);

}  // namespace proton::viewer
