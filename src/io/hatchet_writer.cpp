#include "io/hatchet_writer.h"

#include <algorithm>
#include <variant>
#include <vector>

#include "common/name_table.h"
#include "format/json_writer.h"
#include "format/metric_value_writer.h"
#include "format/msgpack_writer.h"
#include "io/run_info.h"

namespace proton {

namespace {

// Hatchet (and so triton.profiler's viewer) takes its metric columns from the root's keys only,
// so the root lists every scalar metric that appears anywhere, with 0 where it has no value of
// its own. Vector metrics are left out: Hatchet would concatenate them when summing.
std::vector<std::pair<NameId, MetricType>> scalar_columns(const CallTree& tree) {
  std::vector<std::pair<NameId, MetricType>> columns;
  std::vector<bool> seen;
  for (CallTree::NodeId id = 0; id < tree.size(); ++id) {
    const CallTree::Node& node = tree.node(id);
    for (const auto& [metric, value] : node.metrics) {
      MetricType t = metric_type(value);
      if (t != MetricType::kInt && t != MetricType::kFloat) continue;
      // Never written: the kernel's own column of that name stands in its place.
      if (node.has_kernel && is_kernel_column(NameTable::global().name(metric))) continue;
      if (metric >= seen.size()) seen.resize(metric + 1, false);
      if (seen[metric]) continue;
      seen[metric] = true;
      columns.emplace_back(metric, t);
    }
  }
  return columns;
}

// Keys already written into one node's "metrics" object: a metric from the tree that shares a
// name with a column Proton writes itself is skipped rather than written as a second key.
class KeySet {
 public:
  bool insert(std::string_view key) {
    if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) return false;
    keys_.push_back(key);
    return true;
  }

 private:
  std::vector<std::string_view> keys_;
};

template <typename W>
void write_root_columns(W& w, const CallTree& tree, KeySet& written) {
  auto& names = NameTable::global();
  const auto& own = tree.node(CallTree::kRoot).metrics;
  for (const auto& [metric, type] : scalar_columns(tree)) {
    bool has_own = false;
    for (const auto& m : own)
      has_own = has_own || m.first == metric;
    std::string_view name = metric_output_name(names.name(metric));
    if (has_own || (tree.has_kernels() && (name == "time (ns)" || name == "count"))) continue;
    if (!written.insert(name)) continue;  // "x" and "x (exc)" share one column
    written.insert(name);
    w.key(name);
    if (type == MetricType::kInt) {
      w.value(int64_t{0});
    } else {
      w.value(0.0);
    }
  }
}

}  // namespace

bool is_kernel_column(std::string_view name) {
  return name == "time (ns)" || name == "count" || name == "device_id" || name == "device_type";
}

namespace {

template <typename W>
void write_metrics(W& w, const CallTree& tree, CallTree::NodeId id, const CollectionStats& stats) {
  const CallTree::Node& n = tree.node(id);
  auto& names = NameTable::global();
  KeySet written;
  w.key("metrics").begin_object();
  if (id == CallTree::kRoot) {
    write_root_columns(w, tree, written);
    if (tree.has_kernels()) {
      w.key("time (ns)").value(uint64_t{0});
      w.key("count").value(uint64_t{0});
      written.insert("time (ns)");
      written.insert("count");
    }
    if (stats.dropped_records) w.key("dropped_records").value(stats.dropped_records);
    if (stats.unattributed_kernels) {
      w.key("unattributed_kernels").value(stats.unattributed_kernels);
    }
  }
  if (n.has_kernel) {
    w.key("time (ns)").value(n.kernel.time_ns);
    w.key("count").value(n.kernel.count);
    w.key("device_id").value(std::to_string(n.kernel.device_id));
    w.key("device_type").value(device_type_name(n.kernel.device_type));
    for (std::string_view k : {"time (ns)", "count", "device_id", "device_type"})
      written.insert(k);
  }
  if (n.has_cycles && !n.has_kernel) {
    // As triton.profiler 3.6 writes cycle metrics: the device type as the number of its own
    // enum (HIP 0, CUDA 1; seen on an H100: "1").
    w.key("device_id").value(std::to_string(n.cycles_device_id));
    w.key("device_type").value(n.cycles_device_type == DeviceType::kCuda ? "1" : "0");
    written.insert("device_id");
    written.insert("device_type");
  }
  for (const auto& [metric, value] : n.metrics) {
    // Written as triton.profiler writes it, without "(exc)"/"(pty)": the rule travels in the
    // root's "metric_rules" (write_metric_rules).
    std::string_view name = metric_output_name(names.name(metric));
    if (!written.insert(name)) continue;  // a column above holds this name
    w.key(name);
    write_metric_value(w, value);
  }
  w.end_object();
}

// The rule of each metric whose name carried "(exc)" or "(pty)", keyed by the name written:
// {"peak": "exc", "ver": "pty"}, as a key of the root node beside "frame", "metrics" and
// "children". Hatchet and triton.profiler's viewer read only those three keys of a node, so they
// ignore it (and sum every metric, as they do for Triton's own files); our viewer reads it to
// keep such metrics exclusive.
template <typename W>
void write_metric_rules(W& w, const CallTree& tree) {
  auto& names = NameTable::global();
  KeySet seen;
  bool opened = false;
  for (CallTree::NodeId id = 0; id < tree.size(); ++id) {
    for (const auto& [metric, value] : tree.node(id).metrics) {
      std::string_view full = names.name(metric);
      MetricRule rule = metric_rule(full);
      if (rule == MetricRule::kSum) continue;
      std::string_view name = metric_output_name(full);
      if (!seen.insert(name)) continue;
      if (!opened) w.key("metric_rules").begin_object();
      opened = true;
      w.key(name).value(rule == MetricRule::kExclusive ? "exc" : "pty");
    }
  }
  if (opened) w.end_object();
}

template <typename W>
void write_device_map(W& w, std::span<const DeviceInfo> devices) {
  w.begin_object();
  for (DeviceType type : {DeviceType::kCuda, DeviceType::kHip}) {
    bool opened = false;
    for (const DeviceInfo& d : devices) {
      if (d.type != type) continue;
      if (!opened) w.key(device_type_name(type)).begin_object();
      opened = true;
      w.key(std::to_string(d.id)).begin_object();
      w.key("arch").value(d.arch);
      w.key("num_sms").value(uint64_t{d.num_sms});
      w.key("clock_rate").value(d.clock_rate);
      w.key("memory_clock_rate").value(d.memory_clock_rate);
      w.key("bus_width").value(uint64_t{d.bus_width});
      w.end_object();
    }
    if (opened) w.end_object();
  }
  w.end_object();
}

// The rank block on the root's frame (io/run_info.h says why there); nothing outside a job.
template <typename W>
void write_run_info(W& w) {
  RunInfo info = run_info();
  if (!info.is_rank()) return;
  w.key("rank").value(info.rank);
  w.key("world_size").value(info.world_size);
  if (info.local_rank >= 0) w.key("local_rank").value(info.local_rank);
  w.key("host").value(info.host);
  w.key("device").value(info.device);
  if (!info.launcher.empty()) w.key("launcher").value(info.launcher);
  w.key("proton_version").value(proton_version());
}

// One walk for both encodings: the msgpack tree equals the JSON tree key for key.
template <typename W>
void write_hatchet(W& w, const CallTree& tree, std::span<const DeviceInfo> devices,
                   const CollectionStats& stats) {
  auto& names = NameTable::global();
  w.begin_array();
  // Iterative pre-order walk: Python call paths can be deep, the stack must not be.
  struct Frame {
    CallTree::NodeId id;
    size_t next_child;
  };
  std::vector<Frame> stack;
  auto open = [&](CallTree::NodeId id) {
    w.begin_object();
    w.key("frame").begin_object();
    w.key("name").value(names.name(tree.node(id).name));
    w.key("type").value("function");
    if (id == CallTree::kRoot) write_run_info(w);
    w.end_object();
    write_metrics(w, tree, id, stats);
    if (id == CallTree::kRoot) write_metric_rules(w, tree);
    w.key("children").begin_array();
    stack.push_back({id, 0});
  };
  open(CallTree::kRoot);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& children = tree.node(f.id).children;
    if (f.next_child < children.size()) {
      open(children[f.next_child++]);  // may reallocate stack: f is not used after this
    } else {
      w.end_array().end_object();
      stack.pop_back();
    }
  }
  write_device_map(w, devices);
  w.end_array();
}

}  // namespace

std::string hatchet_json(const CallTree& tree, std::span<const DeviceInfo> devices,
                         const CollectionStats& stats) {
  std::string out;
  out.reserve(256 + tree.size() * 160);
  JsonWriter w(out);
  write_hatchet(w, tree, devices, stats);
  out.push_back('\n');
  return out;
}

std::string hatchet_msgpack(const CallTree& tree, std::span<const DeviceInfo> devices,
                            const CollectionStats& stats) {
  std::string out;
  out.reserve(256 + tree.size() * 96);
  MsgpackWriter w(out);
  write_hatchet(w, tree, devices, stats);
  return out;
}

}  // namespace proton
