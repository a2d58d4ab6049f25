// One session's aggregated call tree.
//
// Nodes are frames (scopes, states, Python frames, kernels) identified by interned names; each
// node holds the kernel statistics of the kernels that ran there and any flexible metrics. The
// tree is small however long the run: a repeated path reuses its nodes.
//
// Not thread-safe: the owning Session serialises access (see Session::mu_).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/ids.h"
#include "data/launch_facts.h"
#include "data/metric.h"

namespace proton {

enum class DeviceType : uint8_t { kCuda = 0, kHip = 1 };
const char* device_type_name(DeviceType t);

/// Raised when a metric changes type; the message names the metric and both types.
class MetricTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class CallTree {
 public:
  using NodeId = uint32_t;
  static constexpr NodeId kRoot = 0;

  /// Time and launch count of the kernels that ran on one node, and the shortest and longest
  /// launch: how widely one kernel's launches on one path vary, at the cost of a compare each.
  struct KernelStats {
    uint64_t time_ns = 0;
    uint64_t count = 0;
    uint64_t min_ns = 0;  // valid once count > 0
    uint64_t max_ns = 0;
    uint32_t device_id = 0;
    DeviceType device_type = DeviceType::kCuda;
  };

  struct Node {
    NameId name = kNoName;
    NodeId parent = kRoot;
    std::vector<NodeId> children;  // in creation order
    bool has_kernel = false;
    KernelStats kernel;
    // The last launch's configuration (known() once a backend reported one), and whether the
    // node's launches differed: the same name under one path can be launched with another grid
    // (another shape) or, while autotuning, another compiled config; the last is the steady one.
    LaunchFacts launch;
    bool launch_varies = false;
    std::vector<std::pair<NameId, MetricValue>> metrics;  // flexible metrics, first-use order
    // An intra-kernel region (data/region_metrics.h): the writer adds device_id/device_type.
    bool has_cycles = false;
    uint32_t cycles_device_id = 0;
    DeviceType cycles_device_type = DeviceType::kCuda;
  };

  CallTree();

  NodeId child(NodeId parent, NameId name);
  /// The node for a global context path (see ContextTree), created on first use and cached.
  NodeId node_for_context(ContextId ctx);

  void add_kernel(NodeId node, uint64_t duration_ns, uint32_t device_id, DeviceType type);
  /// Keeps a launch's configuration on a kernel node (a copy of a few words; unknown facts
  /// are ignored).
  void note_launch(NodeId node, const LaunchFacts& facts) {
    if (!facts.known()) return;
    Node& n = nodes_[node];
    if (n.launch.known() && !(n.launch == facts)) n.launch_varies = true;
    n.launch = facts;
  }
  /// Marks `node` as an intra-kernel region measured on `device_id` (region_metrics.h).
  void mark_cycles(NodeId node, uint32_t device_id, DeviceType type);
  /// Adds a flexible metric. Throws MetricTypeError when `name` was seen with another type.
  void add_metric(NodeId node, NameId name, MetricValue value);

  const Node& node(NodeId id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }
  bool has_kernels() const { return has_kernels_; }
  /// Device ids seen per device type (bit i = device i), for the device map.
  uint64_t devices_seen(DeviceType t) const { return devices_seen_[static_cast<int>(t)]; }

  /// Drops every node and metric (data.clear).
  void clear();

 private:
  static uint64_t key(NodeId parent, NameId name) { return (uint64_t{parent} << 32) | name; }

  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, NodeId> child_index_;
  std::vector<NodeId> context_nodes_;  // ContextId -> NodeId (kUnmapped when not yet mapped)
  std::unordered_map<NameId, MetricType> metric_types_;
  bool has_kernels_ = false;
  uint64_t devices_seen_[2] = {0, 0};
};

}  // namespace proton
