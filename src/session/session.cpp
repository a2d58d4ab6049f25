#include "session/session.h"

#include <algorithm>
#include <stdexcept>

#include "context/launch_ops.h"
#include "data/trace_store.h"
#include "io/chrome_trace_writer.h"
#include "io/counter_track_writer.h"

namespace proton {

namespace {

// Output extensions mirror triton.profiler's: path + "." + format name.
std::string extension_of(std::string_view format) {
  if (format == "hatchet_msgpack") return ".hatchet_msgpack";
  if (format == "chrome_trace") return ".chrome_trace";
  return ".hatchet";
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Session::Session(SessionId id, SessionOptions options, uint32_t epoch)
    : id_(id),
      options_(std::move(options)),
      flushing_(options_.periodic_flushing()),
      python_context_(options_.python_context) {
  if (options_.pc_sampling() != nullptr) pc_ = std::make_unique<PcAttribution>();
  phase_starts_.push_back(epoch);
  if (options_.data.tree) trees_[0] = std::make_unique<CallTree>();
}

Session::Session(SessionId id, const SessionConfig& config, uint32_t epoch)
    : Session(id, make_session_options(config, Environment{}), epoch) {}

Session::~Session() = default;

std::string Session::output_path(std::string_view format, int64_t phase) const {
  std::string base = config_.name;
  for (std::string_view known : {".hatchet", ".hatchet_msgpack", ".chrome_trace"}) {
    if (ends_with(base, known)) {
      base.resize(base.size() - known.size());
      break;
    }
  }
  if (phase >= 0) base += ".part_" + std::to_string(phase);
  return base + extension_of(format);
}

CallTree& Session::tree() {
  auto& t = trees_[current_phase()];
  if (!t) t = std::make_unique<CallTree>();
  return *t;
}

uint32_t Session::begin_phase(uint32_t epoch) {
  phase_starts_.push_back(epoch);
  if (data_.tree) trees_[current_phase()] = std::make_unique<CallTree>();
  if (trace_per_phase_ && trace_ && !trace_finished_) {
    // The closed phase keeps its store for late kernels; the new one starts its own file.
    uint32_t closed = current_phase() - 1;
    phase_traces_.close(closed, output_path("chrome_trace", closed), std::move(trace_writer_),
                        std::move(trace_));
    start_trace(trace_clock_, gpu_offset_ns_, kernel_boxes_);
  }
  return current_phase();
}

CallTree* Session::phase_tree(uint32_t phase) {
  auto it = trees_.find(phase);
  return it == trees_.end() ? nullptr : it->second.get();
}

std::vector<uint32_t> Session::live_phases() const {
  std::vector<uint32_t> out;
  for (const auto& [phase, tree] : trees_)
    out.push_back(phase);
  return out;
}

void Session::clear_phases(uint32_t phase, bool up_to) {
  if (pc_) pc_->forget_phases(phase, up_to);
  if (up_to) {
    trees_.erase(trees_.begin(), trees_.upper_bound(phase));
  } else {
    trees_.erase(phase);
  }
  // The current phase keeps collecting: it restarts empty (triton.profiler's clear of the
  // current phase also only drops what it holds).
  if (data_.tree && !trees_.count(current_phase())) {
    trees_[current_phase()] = std::make_unique<CallTree>();
  }
}

uint32_t Session::phase_of(const LaunchTag& tag) const {
  // Stamps are epochs mod 2^24, never newer than the current epoch: recover the full value.
  uint32_t now = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
  uint32_t epoch = now - ((now - tag_epoch(tag)) & kTagEpochMask);
  auto after = std::upper_bound(phase_starts_.begin(), phase_starts_.end(), epoch);
  return static_cast<uint32_t>(after == phase_starts_.begin() ? 0
                                                              : after - phase_starts_.begin() - 1);
}

TraceStore* Session::trace_for(const LaunchTag& tag) {
  if (!trace_ || trace_finished_) return nullptr;
  if (!trace_per_phase_) return trace_.get();
  uint32_t phase = phase_of(tag);
  // A phase already written takes no more events.
  return phase == current_phase() ? trace_.get() : phase_traces_.store(phase);
}

CallTree* Session::tree_for(const LaunchTag& tag) {
  if (!data_.tree) return nullptr;
  CallTree* t = phase_tree(phase_of(tag));
  if (t == nullptr) ++late_kernels;
  return t;
}

void Session::start_trace(const TraceClock& clock, int64_t gpu_offset_ns, bool kernel_boxes) {
  gpu_offset_ns_ = gpu_offset_ns;
  kernel_boxes_ = kernel_boxes;
  trace_base_steady_ns_ = clock.base_steady_ns;
  trace_clock_ = clock;
  trace_per_phase_ = flushing_.enabled && flushing_.format == "chrome_trace";
  // Per phase, the current phase's file is named once the session advances (begin_phase).
  trace_writer_ = std::make_unique<ChromeTraceWriter>(
      output_path("chrome_trace",
                  trace_per_phase_ && current_phase() > 0 ? int64_t{current_phase()} : -1),
      clock);
  trace_ = std::make_unique<TraceStore>(
      config_.trace_budget_bytes, [w = trace_writer_.get()](auto events) { w->append(events); });
}

void Session::finish_phase_trace(uint32_t phase, uint64_t now_ns) {
  phase_traces_.finish(phase, now_ns);
}

void Session::finish_trace(uint64_t now_ns) {
  if (!trace_ || trace_finished_) return;
  phase_traces_.finish_all(now_ns);  // closed phases not complete by now: what they have
  // Regions whose kernel record never came: placed by the GPU clock offset alone.
  for (const RegionAlignment::Batch& b : region_alignment_.take_unmatched())
    emit_regions(b, trace_ns(RegionAlignment::first_start(b)));
  trace_->close_open_scopes(now_ns);
  trace_->for_each_chunk([this](auto events) { trace_writer_->append(events); });
  TraceSummary summary;
  summary.recorded_events = trace_->recorded();
  summary.dropped_events = trace_->dropped();
  summary.dropped_before_ns = trace_->dropped_before_ns();
  summary.budget_bytes = trace_->budget_bytes();
  summary.dropped_records = dropped_records;
  summary.unattributed_kernels = unattributed_kernels;
  summary.unfinished_scopes = trace_->unfinished_scopes();
  if (counter_track_) {
    trace_writer_->append_raw(
        counter_track_events(*counter_track_, gpu_offset_ns_, trace_base_steady_ns_));
  }
  trace_finished_ = true;  // the events are in the writer now: never append them twice
  trace_writer_->finish(summary);
}

void Session::add_region_spans(ContextId ctx, NameId kernel, uint32_t device,
                               std::span<const RegionSpan> spans, LaunchSpan launch) {
  std::lock_guard lock(mu);
  if (!trace_ || trace_finished_) return;
  RegionAlignment::Batch b{ctx, kernel, device, {spans.begin(), spans.end()}};
  if (!kernel_boxes_) {
    // No kernel record will come: the GPU clock offset alone places the regions, and the
    // launch's extent stands in for the kernel's box.
    if (launch.end_ns > launch.start_ns) {
      TraceEvent e;
      e.kind = TraceEvent::kKernel;
      e.start_ns = trace_ns(launch.start_ns);
      e.end_ns = trace_ns(launch.end_ns);
      e.context = ctx;
      e.name = kernel;
      e.device = device;
      e.stream = kRegionKernelLane;
      e.flags = kTraceFromRegions;
      trace_->add(e);
    }
    emit_regions(b, trace_ns(RegionAlignment::first_start(b)));
    return;
  }
  if (auto start = region_alignment_.on_regions(std::move(b))) {
    emit_regions(RegionAlignment::Batch{ctx, kernel, device, {spans.begin(), spans.end()}}, *start);
  }
}

uint64_t Session::trace_ns(uint64_t gpu_ns) const {
  return static_cast<uint64_t>(static_cast<int64_t>(gpu_ns) - gpu_offset_ns_);
}

void Session::emit_regions(const RegionAlignment::Batch& b, uint64_t kernel_start_ns) {
  const uint64_t first = RegionAlignment::first_start(b);
  for (const RegionSpan& r : b.spans) {
    TraceEvent e;
    e.kind = TraceEvent::kRegion;
    e.start_ns = kernel_start_ns + (r.start_ns - first);
    e.end_ns = e.start_ns + (r.end_ns - r.start_ns);
    e.context = b.ctx;
    e.name = r.name;
    e.device = b.device;
    e.stream = r.sm;
    e.correlation = r.cta;
    e.thread = r.warp;
    e.flags = static_cast<uint16_t>(std::min<uint32_t>(r.group_warps, 0xffffu));
    e.op = b.kernel;
    trace_->add(e);
  }
}

void Session::add_scope_event(const LaunchTag& tag) {
  std::lock_guard lock(mu);
  TraceStore* trace = trace_for(tag);
  if (trace == nullptr) return;
  if (tag.flags & kTagScopeEnter) {
    trace->scope_enter(tag.thread, tag.context, tag.cpu_ns);
  } else {
    trace->scope_exit(tag.thread, tag.context, tag.cpu_ns);
  }
}

void Session::add_kernel(const LaunchTag& tag, const KernelRecord& r) {
  // Kernel records on for another session: this one keeps region cycles only, as it started
  // (its kernel boxes come from the CTAs' extent).
  if (!config_.kernel_records) return;
  ContextId ctx =
      python_context_ && tag.python_context != kRootContext ? tag.python_context : tag.context;
  std::lock_guard lock(mu);
  if (CallTree* tree = tree_for(tag)) {
    // Launch metadata (hook="triton") renames the kernel's node and adds its metrics, once per
    // launch.
    const LaunchOp* op = tag.op != 0 ? &LaunchOps::global().get(tag.op) : nullptr;
    NameId name = op != nullptr && op->name != kNoName ? op->name : r.name;
    CallTree::NodeId kernel = tree->child(tree->node_for_context(ctx), name);
    tree->add_kernel(kernel, r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0, r.device_id,
                     r.device_type);
    if (pc_) {
      // PC samples name the function, never the launch: note where it ran and for how long.
      for (const auto& [phase, t] : trees_) {
        if (t.get() == tree) {
          pc_->note_kernel(r.name, phase, kernel,
                           r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0);
          break;
        }
      }
    }
    if (counters_enabled()) join_counters(tag, kernel, r);
    for (size_t i = 0; op != nullptr && i < op->metrics.size(); ++i) {
      try {
        tree->add_metric(kernel, op->metrics[i].first, op->metrics[i].second);
      } catch (const MetricTypeError&) {
        // The hook rejects type changes before the launch; never let one stop delivery.
      }
    }
  }
  if (tag.flags & kTagUnattributed) ++unattributed_kernels;
  if (TraceStore* trace = trace_for(tag)) {
    TraceEvent e;
    e.kind = TraceEvent::kKernel;
    e.start_ns = trace_ns(r.start_ns);
    e.end_ns = trace_ns(r.end_ns);
    e.launch_ns = tag.cpu_ns;
    e.correlation = r.correlation;
    e.context = ctx;
    e.name = r.name;
    e.device = r.device_id;
    e.stream = r.stream_id;
    e.thread = tag.thread;
    e.op = tag.op;  // the writer renames the event and adds the op's metrics, as the tree does
    e.device_type = static_cast<uint8_t>(r.device_type);
    if (tag.flags & kTagUnattributed) e.flags |= kTraceUnattributed;
    if (r.correlation != last_launch_) e.flags |= kTraceFirstOfLaunch;
    last_launch_ = r.correlation;
    trace->add(e);
    // Intra-kernel regions of this launch, if they came first (session/region_alignment.h).
    if (auto regions = region_alignment_.on_kernel(r.name, e.start_ns))
      emit_regions(*regions, e.start_ns);
  }
}

void Session::add_metrics(ContextId ctx, std::span<const std::pair<NameId, MetricValue>> metrics) {
  std::lock_guard lock(mu);
  if (!data_.tree) return;  // a trace-only session has no tree to hold scope metrics
  CallTree& t = tree();
  CallTree::NodeId node = t.node_for_context(ctx);
  for (const auto& [name, value] : metrics)
    t.add_metric(node, name, value);
}

PcAttribution::TreeOf Session::pc_tree_of() {
  // UINT32_MAX: the current phase (where samples of unknown functions go).
  return [this](uint32_t phase) -> CallTree* {
    if (!data_.tree) return nullptr;
    return phase == UINT32_MAX ? &tree() : phase_tree(phase);
  };
}

void Session::add_pc_samples(const PcSampleBatch& batch) {
  std::lock_guard lock(mu);
  if (!pc_) return;
  pc_->add(batch);
  pc_->distribute(pc_tree_of(), /*final=*/false);
}

void Session::settle_pc_samples() {
  if (!pc_ || !data_.tree) return;
  pc_->distribute(pc_tree_of(), /*final=*/true);
  pc_->write_counters(tree());
}

}  // namespace proton
