// The collectors of a session's call tree, regions, PC samples and trace (session/collector.h);
// the counters' collector is in session_counters.cpp, beside the rest of the counters' half.
#include <algorithm>
#include <variant>

#include "common/name_table.h"
#include "context/launch_ops.h"
#include "data/trace_store.h"
#include "session/session.h"

namespace proton {

namespace {

uint64_t duration_of(const KernelRecord& r) {
  return r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
}

// The metrics of host calls (docs/advise.md, "Host calls"), interned once.
struct HostCallMetrics {
  NameId sync_time = NameTable::global().intern("sync_time (ns)");
  NameId sync_calls = NameTable::global().intern("sync_calls");
  NameId copy_time = NameTable::global().intern("memcpy_time (ns)");
  NameId copy_calls = NameTable::global().intern("memcpy_calls");
  NameId copy_bytes = NameTable::global().intern("memcpy_bytes");
};

const HostCallMetrics& host_call_metrics() {
  static const HostCallMetrics m;
  return m;
}

}  // namespace

const char* host_call_frame(const HostCall& call) {
  switch (call.kind) {
    case HostCallKind::kStreamSync:
      return "cudaStreamSynchronize";
    case HostCallKind::kDeviceSync:
      return "cudaDeviceSynchronize";
    case HostCallKind::kEventSync:
      return "cudaEventSynchronize";
    case HostCallKind::kCopy:
      break;
  }
  const bool pageable = call.memory == HostMemory::kPageable;
  switch (call.direction) {
    case CopyDirection::kHtoD:
      return pageable ? "memcpy HtoD (pageable)" : "memcpy HtoD (blocking)";
    case CopyDirection::kDtoH:
      return pageable ? "memcpy DtoH (pageable)" : "memcpy DtoH (blocking)";
    case CopyDirection::kDtoD:
      return "memcpy DtoD (blocking)";
    case CopyDirection::kHtoH:
      return pageable ? "memcpy HtoH (pageable)" : "memcpy HtoH (blocking)";
    case CopyDirection::kUnknown:
      break;
  }
  return pageable ? "memcpy (pageable)" : "memcpy (blocking)";
}

TreeCollector::TreeCollector(Session& s)
    : Collector(
          s, record_bit<KernelDone>() | record_bit<RecordsLost>() | record_bit<HostCallDone>()) {}

void TreeCollector::add_host_call(const HostCallDone& done) {
  Session& s = session_;
  CallTree* tree = s.data_.tree ? s.phase_tree(s.phase_for(done.tag)) : nullptr;
  if (tree == nullptr) return;
  const HostCall& c = done.call;
  const HostCallMetrics& m = host_call_metrics();
  NameId frame = NameTable::global().intern(host_call_frame(c));
  CallTree::NodeId node = tree->child(tree->node_for_context(s.context_of(done.tag)), frame);
  const bool copy = c.kind == HostCallKind::kCopy;
  try {
    tree->add_metric(node, copy ? m.copy_time : m.sync_time,
                     MetricValue{static_cast<int64_t>(c.duration_ns)});
    if (!c.continued) {
      tree->add_metric(node, copy ? m.copy_calls : m.sync_calls, MetricValue{int64_t{1}});
    }
    if (copy && c.bytes != 0) {
      tree->add_metric(node, m.copy_bytes, MetricValue{static_cast<int64_t>(c.bytes)});
    }
  } catch (const MetricTypeError&) {
    // A user metric of the same name and another type: never let it stop delivery.
  }
}

void Session::place_exposed_comm() {
  static const NameId metric = NameTable::global().intern("exposed_comm (ns)");
  for (const CommOverlap::Exposed& e : comm_.ready()) {
    CallTree* tree = phase_tree(e.site.phase);
    // Gone with its phase, or the phase was cleared and the node id now names another frame.
    if (tree == nullptr || e.site.node >= tree->size() ||
        tree->node(e.site.node).name != e.site.name)
      continue;
    try {
      tree->add_metric(e.site.node, metric, MetricValue{static_cast<int64_t>(e.exposed_ns)});
    } catch (const MetricTypeError&) {
      // A user metric of the same name and another type: never let it stop delivery.
    }
  }
  comm_.ready().clear();
}

void Session::settle_comm() {
  if (!data_.tree) return;
  comm_.flush();
  place_exposed_comm();
}

void TreeCollector::collect(const Record& record) {
  Session& s = session_;
  if (const auto* lost = std::get_if<RecordsLost>(&record)) {
    s.dropped_records += lost->count;
    return;
  }
  if (const auto* host = std::get_if<HostCallDone>(&record)) {
    add_host_call(*host);
    return;
  }
  const auto& [tag, r] = std::get<KernelDone>(record);
  if (s.data_.tree) {
    uint32_t phase = s.phase_for(tag);
    if (CallTree* tree = s.phase_tree(phase)) {
      // Launch metadata (hook="triton") renames the kernel's node and adds its metrics, once
      // per launch.
      const LaunchOp* op = tag.op != 0 ? &LaunchOps::global().get(tag.op) : nullptr;
      NameId name = op != nullptr && op->name != kNoName ? op->name : r.name;
      CallTree::NodeId kernel = tree->child(tree->node_for_context(s.context_of(tag)), name);
      tree->add_kernel(kernel, duration_of(r), r.device_id, r.device_type);
      tree->note_launch(kernel, r.launch);
      s.placed_ = {tree, phase, kernel};
      // Collectives wait for the compute records that ran beside them (data/comm_overlap.h).
      const uint64_t device = (uint64_t{static_cast<uint8_t>(r.device_type)} << 32) | r.device_id;
      s.comm_.add(device, r.stream_id, r.start_ns, r.end_ns, s.comm_.is_comm(r.name),
                  {phase, kernel, name});
      if (!s.comm_.ready().empty()) s.place_exposed_comm();
      if (s.comm_.take_flush_wanted()) s.records_wanted_.store(true, std::memory_order_relaxed);
      for (size_t i = 0; op != nullptr && i < op->metrics.size(); ++i) {
        try {
          tree->add_metric(kernel, op->metrics[i].first, op->metrics[i].second);
        } catch (const MetricTypeError&) {
          // The hook rejects type changes before the launch; never let one stop delivery.
        }
      }
      for (size_t i = 0; op != nullptr && i < op->device_slots.size(); ++i) {
        s.device_sites_.note(op->device_slots[i].second, phase, kernel);
      }
    } else {
      ++s.late_kernels;  // its phase was cleared or written out
    }
  }
  if (tag.flags & kTagUnattributed) ++s.unattributed_kernels;
}

RegionCollector::RegionCollector(Session& s) : Collector(s, record_bit<LaunchRegions>()) {}

void RegionCollector::collect(const Record& record) {
  const LaunchRegions& g = std::get<LaunchRegions>(record);
  CallTree& tree = session_.tree();
  CallTree::NodeId node = tree.child(tree.node_for_context(g.ctx), g.kernel);
  try {
    add_region_totals(tree, node, g.totals, g.units, g.device, DeviceType::kCuda);
  } catch (const MetricTypeError&) {
    // A user metric named "cycles" of another type: never let it stop delivery.
  }
}

PcCollector::PcCollector(Session& s)
    : Collector(s, record_bit<KernelDone>() | record_bit<PcSamples>()) {}

void PcCollector::collect(const Record& record) {
  Session& s = session_;
  if (const auto* k = std::get_if<KernelDone>(&record)) {
    // PC samples name the function, never the launch: note where it ran and for how long.
    if (s.placed_.tree != nullptr) {
      s.pc_->note_kernel(k->kernel.name, s.placed_.phase, s.placed_.node, duration_of(k->kernel));
    }
    return;
  }
  s.pc_->add(std::get<PcSamples>(record).batch);
  s.pc_->distribute(s.pc_tree_of(), /*final=*/false);
}

TraceCollector::TraceCollector(Session& s)
    : Collector(s, record_bit<KernelDone>() | record_bit<ScopeEvent>() |
                       record_bit<LaunchRegions>() | record_bit<HostCallDone>()) {}

void TraceCollector::collect(const Record& record) {
  Session& s = session_;
  if (s.trace_finished_) return;
  if (const auto* host = std::get_if<HostCallDone>(&record)) {
    TraceStore* trace = s.trace_for(host->tag);
    if (trace == nullptr) return;
    TraceEvent e;
    e.kind = TraceEvent::kHostCall;
    e.start_ns = host->call.start_ns;  // the steady clock, as scopes
    e.end_ns = host->call.start_ns + host->call.duration_ns;
    e.correlation = host->call.bytes;
    e.context = s.context_of(host->tag);
    e.name = NameTable::global().intern(host_call_frame(host->call));
    e.thread = host->tag.thread;
    e.flags = host->call.continued ? 1 : 0;
    trace->add(e);
    return;
  }
  if (const auto* scope = std::get_if<ScopeEvent>(&record)) {
    const LaunchTag& tag = scope->tag;
    TraceStore* trace = s.trace_for(tag);  // per phase with periodic chrome traces
    if (trace == nullptr) return;
    if (tag.flags & kTagScopeMetrics) {
      trace->scope_metrics(tag.thread, tag.op);
    } else if (tag.flags & kTagScopeEnter) {
      trace->scope_enter(tag.thread, tag.context, tag.cpu_ns);
    } else {
      trace->scope_exit(tag.thread, tag.context, tag.cpu_ns);
    }
    return;
  }
  if (const auto* g = std::get_if<LaunchRegions>(&record)) {
    if (g->spans.empty()) return;
    RegionAlignment::Batch b{g->ctx, g->kernel, g->device, {g->spans.begin(), g->spans.end()}};
    if (!s.kernel_boxes_) {
      // No kernel record will come: the GPU clock offset alone places the regions, and the
      // launch's extent stands in for the kernel's box.
      if (g->launch.end_ns > g->launch.start_ns) {
        TraceEvent e;
        e.kind = TraceEvent::kKernel;
        e.start_ns = s.trace_ns(g->launch.start_ns);
        e.end_ns = s.trace_ns(g->launch.end_ns);
        e.context = g->ctx;
        e.name = g->kernel;
        e.device = g->device;
        e.stream = kRegionKernelLane;
        e.flags = kTraceFromRegions;
        s.trace_->add(e);
      }
      s.emit_regions(b, s.trace_ns(RegionAlignment::first_start(b)));
      return;
    }
    if (auto start = s.region_alignment_.on_regions(std::move(b))) {
      s.emit_regions(
          RegionAlignment::Batch{g->ctx, g->kernel, g->device, {g->spans.begin(), g->spans.end()}},
          *start);
    }
    return;
  }
  const auto& [tag, r] = std::get<KernelDone>(record);
  TraceStore* trace = s.trace_for(tag);
  if (trace == nullptr) return;
  TraceEvent e;
  e.kind = TraceEvent::kKernel;
  e.start_ns = s.trace_ns(r.start_ns);
  e.end_ns = s.trace_ns(r.end_ns);
  e.launch_ns = tag.cpu_ns;
  e.correlation = r.correlation;
  e.context = s.context_of(tag);
  e.name = r.name;
  e.device = r.device_id;
  e.stream = r.stream_id;
  e.thread = tag.thread;
  e.op = tag.op;  // the writer renames the event and adds the op's metrics, as the tree does
  e.device_type = static_cast<uint8_t>(r.device_type);
  if (tag.flags & kTagUnattributed) e.flags |= kTraceUnattributed;
  if (r.correlation != s.last_launch_) e.flags |= kTraceFirstOfLaunch;
  s.last_launch_ = r.correlation;
  trace->add(e);
  // Intra-kernel regions of this launch, if they came first (session/region_alignment.h).
  if (auto regions = s.region_alignment_.on_kernel(r.name, e.start_ns))
    s.emit_regions(*regions, e.start_ns);
}

}  // namespace proton
