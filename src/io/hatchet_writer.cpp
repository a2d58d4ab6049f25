#include "io/hatchet_writer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/name_table.h"
#include "data/compiled_kernels.h"
#include "format/hatchet_emitter.h"
#include "format/json_writer.h"
#include "format/kernel_facts.h"
#include "format/launch_facts.h"
#include "format/msgpack_writer.h"
#include "io/run_info.h"

namespace proton {

namespace {

using format::HatchetEmitter;

// Hatchet (and so triton.profiler's viewer) takes its metric columns from the root's keys only,
// and sums those columns over each subtree. So the root lists every summed scalar metric that
// appears anywhere, with 0 where it has no value of its own. Left out: vector metrics (Hatchet
// would concatenate them when summing) and exclusive ones ("x (exc)"), which Triton writes only
// on the nodes that recorded them; Hatchet then keeps them per node, unsummed.
std::vector<std::pair<NameId, MetricType>> scalar_columns(const CallTree& tree) {
  std::vector<std::pair<NameId, MetricType>> columns;
  std::vector<bool> seen;
  auto& names = NameTable::global();
  for (CallTree::NodeId id = 0; id < tree.size(); ++id) {
    const CallTree::Node& node = tree.node(id);
    for (const auto& [metric, value] : node.metrics) {
      MetricType t = metric_type(value);
      if (t != MetricType::kInt && t != MetricType::kFloat) continue;
      if (metric_rule(names.name(metric)) == MetricRule::kExclusive) continue;
      // Never written: the kernel's own column of that name stands in its place.
      if (node.has_kernel && is_kernel_column(names.name(metric))) continue;
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
void write_root_columns(HatchetEmitter<W>& e, const CallTree& tree, KeySet& written) {
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
    if (type == MetricType::kInt) {
      e.metric(name, int64_t{0});
    } else {
      e.metric(name, 0.0);
    }
  }
}

}  // namespace

namespace {

// The launch facts of a kernel node as (name, value) pairs (format/launch_facts.h), in the order
// they are written. Cluster dimensions only where the record had them.
template <typename Fn>
void for_each_launch_fact(const CallTree::Node& n, Fn&& fn) {
  namespace names = format::launch_facts;
  if (!n.has_kernel || !n.launch.known()) return;
  const LaunchFacts& f = n.launch;
  for (size_t i = 0; i < 3; ++i)
    fn(names::kGrid[i], uint64_t{f.grid[i]});
  for (size_t i = 0; i < 3; ++i)
    fn(names::kBlock[i], uint64_t{f.block[i]});
  if (f.cluster[0] != 0) {
    for (size_t i = 0; i < 3; ++i)
      fn(names::kCluster[i], uint64_t{f.cluster[i]});
  }
  fn(names::kRegisters, uint64_t{f.registers_per_thread});
  fn(names::kStaticShared, uint64_t{f.static_shared_bytes});
  fn(names::kDynamicShared, uint64_t{f.dynamic_shared_bytes});
  fn(names::kLocal, uint64_t{f.local_bytes_per_thread});
  if (n.launch_varies) fn(names::kVaries, uint64_t{1});
}

// The spread of a kernel node's launch times and its compiled Triton kernel's numbers
// (format/kernel_facts.h), as (name, value) pairs; `compiled` is the node's match or null.
template <typename Fn>
void for_each_kernel_fact(const CallTree::Node& n, const CompiledKernel* compiled, Fn&& fn) {
  namespace names = format::kernel_facts;
  if (!n.has_kernel || n.kernel.count == 0) return;
  fn(names::kTimeMin, n.kernel.min_ns);
  fn(names::kTimeMax, n.kernel.max_ns);
  if (compiled == nullptr) return;
  const std::pair<const char*, int64_t> numbers[] = {
      {names::kNumWarps, compiled->num_warps}, {names::kNumStages, compiled->num_stages},
      {names::kNumCtas, compiled->num_ctas},   {names::kShared, compiled->shared_bytes},
      {names::kRegs, compiled->n_regs},        {names::kSpills, compiled->n_spills}};
  for (const auto& [name, v] : numbers) {
    if (v >= 0) fn(name, static_cast<uint64_t>(v));
  }
}

// The compiled kernel a kernel node ran, if the process registered one that fits it.
const CompiledKernel* compiled_for(const CallTree::Node& n,
                                   std::span<const CompiledKernel> compiled) {
  if (!n.has_kernel || compiled.empty()) return nullptr;
  return match_compiled(compiled, NameTable::global().name(n.name), n.launch);
}

}  // namespace

bool is_kernel_column(std::string_view name) {
  return name == "time (ns)" || name == "count" || name == "device_id" || name == "device_type";
}

namespace {

template <typename W>
void write_metrics(HatchetEmitter<W>& e, const CallTree& tree, CallTree::NodeId id,
                   const CollectionStats& stats, std::span<const CompiledKernel> compiled) {
  const CallTree::Node& n = tree.node(id);
  const CompiledKernel* ck = compiled_for(n, compiled);
  auto& names = NameTable::global();
  KeySet written;
  if (id == CallTree::kRoot) {
    write_root_columns(e, tree, written);
    if (tree.has_kernels()) {
      e.metric("time (ns)", uint64_t{0});
      e.metric("count", uint64_t{0});
      written.insert("time (ns)");
      written.insert("count");
    }
    if (stats.dropped_records) e.metric("dropped_records", stats.dropped_records);
    if (stats.unattributed_kernels) e.metric("unattributed_kernels", stats.unattributed_kernels);
  }
  if (n.has_kernel) {
    e.metric("time (ns)", n.kernel.time_ns);
    e.metric("count", n.kernel.count);
    // Properties of the kernel's last launch: not among the root's columns, so Hatchet keeps
    // them per node as it keeps device_id; their "pty" rules are in metric_rules. Numbers
    // before the strings, the order in which the viewer writes a node back.
    auto number = [&](const char* name, uint64_t v) {
      e.metric(name, v);
      written.insert(name);
    };
    for_each_launch_fact(n, number);
    for_each_kernel_fact(n, ck, number);
    e.metric("device_id", std::to_string(n.kernel.device_id));
    e.metric("device_type", device_type_name(n.kernel.device_type));
    for (std::string_view k : {"time (ns)", "count", "device_id", "device_type"})
      written.insert(k);
    if (ck != nullptr) {
      namespace names = format::kernel_facts;
      for (const auto& [name, text] :
           {std::pair{names::kConfig, &ck->config}, std::pair{names::kSource, &ck->source}}) {
        if (text->empty()) continue;
        e.metric(name, std::string_view(*text));
        written.insert(name);
      }
    }
  }
  if (n.has_cycles && !n.has_kernel) {
    // As triton.profiler 3.6 writes cycle metrics: the device type as the number of its own
    // enum (HIP 0, CUDA 1; seen on an H100: "1").
    e.metric("device_id", std::to_string(n.cycles_device_id));
    e.metric("device_type", n.cycles_device_type == DeviceType::kCuda ? "1" : "0");
    written.insert("device_id");
    written.insert("device_type");
  }
  for (const auto& [metric, value] : n.metrics) {
    // Written as triton.profiler writes it, without "(exc)"/"(pty)": the rule travels in the
    // root's "metric_rules" (write_metric_rules).
    std::string_view name = metric_output_name(names.name(metric));
    if (!written.insert(name)) continue;  // a column above holds this name
    e.metric(name, value);
  }
}

// The rule of each metric whose name carried "(exc)" or "(pty)", keyed by the name written:
// {"peak": "exc", "ver": "pty"}, as a key of the root node beside "frame", "metrics" and
// "children". Hatchet and triton.profiler's viewer read only those three keys of a node, so they
// ignore it (and sum every metric, as they do for Triton's own files); our viewer reads it to
// keep such metrics exclusive.
template <typename W>
void write_metric_rules(HatchetEmitter<W>& e, const CallTree& tree,
                        std::span<const CompiledKernel> compiled) {
  auto& names = NameTable::global();
  KeySet seen;
  auto property = [&](const char* name, uint64_t) {
    if (seen.insert(name)) e.metric_rule(name, format::HatchetRule::kProperty);
  };
  for (CallTree::NodeId id = 0; id < tree.size(); ++id) {
    const CallTree::Node& n = tree.node(id);
    const CompiledKernel* ck = compiled_for(n, compiled);
    for_each_launch_fact(n, property);
    for_each_kernel_fact(n, ck, property);
    if (ck == nullptr) continue;
    if (!ck->config.empty()) property(format::kernel_facts::kConfig, 0);
    if (!ck->source.empty()) property(format::kernel_facts::kSource, 0);
  }
  for (CallTree::NodeId id = 0; id < tree.size(); ++id) {
    for (const auto& [metric, value] : tree.node(id).metrics) {
      std::string_view full = names.name(metric);
      MetricRule rule = metric_rule(full);
      if (rule == MetricRule::kSum) continue;
      std::string_view name = metric_output_name(full);
      if (!seen.insert(name)) continue;
      e.metric_rule(name, rule == MetricRule::kExclusive ? format::HatchetRule::kExclusive
                                                         : format::HatchetRule::kProperty);
    }
  }
}

template <typename W>
void write_device_map(HatchetEmitter<W>& e, std::span<const DeviceInfo> devices) {
  e.begin_devices();
  for (DeviceType type : {DeviceType::kCuda, DeviceType::kHip}) {
    for (const DeviceInfo& d : devices) {
      if (d.type != type) continue;
      format::HatchetDevice h;
      h.type = device_type_name(type);
      h.id = std::to_string(d.id);
      h.arch = d.arch;
      h.num_sms = static_cast<double>(d.num_sms);
      h.clock_rate_khz = static_cast<double>(d.clock_rate);
      h.memory_clock_rate_khz = static_cast<double>(d.memory_clock_rate);
      h.bus_width_bits = static_cast<double>(d.bus_width);
      if (d.max_threads_per_sm > 0) {
        h.warp_size = d.warp_size;
        h.max_threads_per_sm = d.max_threads_per_sm;
        h.max_warps_per_sm = d.warp_size > 0 ? d.max_threads_per_sm / d.warp_size : 0.0;
        h.max_blocks_per_sm = d.max_blocks_per_sm;
        h.registers_per_sm = d.registers_per_sm;
        h.shared_memory_per_sm = d.shared_memory_per_sm;
        h.reserved_shared_memory_per_block = d.reserved_shared_memory_per_block;
      }
      e.device(h);
    }
  }
  e.end_devices();
}

// The rank block on the root's frame (io/run_info.h says why there); nothing outside a job.
template <typename W>
void write_run_info(HatchetEmitter<W>& e) {
  RunInfo info = run_info();
  if (!info.is_rank()) return;
  e.frame_field("rank", info.rank);
  e.frame_field("world_size", info.world_size);
  if (info.local_rank >= 0) e.frame_field("local_rank", info.local_rank);
  e.frame_field("host", std::string_view(info.host));
  e.frame_field("device", std::string_view(info.device));
  if (!info.launcher.empty()) e.frame_field("launcher", std::string_view(info.launcher));
  e.frame_field("proton_version", proton_version());
}

// A window's number and kept steps, on the root's frame beside the rank block (frame keys stay
// attributes in Hatchet; a metric would become a summed column).
template <typename W>
void write_window(HatchetEmitter<W>& e, const CollectionStats& stats) {
  if (stats.window < 0) return;
  e.frame_field("window", stats.window);
  if (stats.window_first_step < 0) return;
  e.frame_field("first_step", stats.window_first_step);
  e.frame_field("last_step", stats.window_last_step);
}

// One walk for both encodings: the msgpack tree equals the JSON tree key for key.
template <typename W>
void write_hatchet(W& w, const CallTree& tree, std::span<const DeviceInfo> devices,
                   const CollectionStats& stats) {
  auto& names = NameTable::global();
  // Copied once per write: kernels compiled while it runs join the next one.
  const std::vector<CompiledKernel> compiled = CompiledKernels::global().snapshot();
  HatchetEmitter<W> e(w);
  e.begin_profile();
  format::write_tree(
      e,
      CallTree::kRoot, [&](CallTree::NodeId id) -> const auto& { return tree.node(id).children; },
      [&](CallTree::NodeId id) {
        e.begin_node(names.name(tree.node(id).name));
        if (id == CallTree::kRoot) {
          write_run_info(e);
          write_window(e, stats);
        }
        write_metrics(e, tree, id, stats, compiled);
        if (id == CallTree::kRoot) write_metric_rules(e, tree, compiled);
      });
  write_device_map(e, devices);
  e.end_profile();
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
