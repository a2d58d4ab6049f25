#include "session/session.h"

#include <algorithm>
#include <stdexcept>

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
      python_context_(options_.python_context),
      kernel_records_(options_.config.kernel_records) {
  phase_starts_.push_back(epoch);
  if (options_.data.tree) trees_[0] = std::make_unique<CallTree>();
  add_collector(kTree, std::make_unique<TreeCollector>(*this));
  add_collector(kRegions, std::make_unique<RegionCollector>(*this));
  if (options_.pc_sampling() != nullptr) {
    pc_ = std::make_unique<PcAttribution>();
    add_collector(kPc, std::make_unique<PcCollector>(*this));
  }
}

Session::Session(SessionId id, const SessionConfig& config, uint32_t epoch)
    : Session(id, make_session_options(config, Environment{}), epoch) {}

Session::~Session() = default;

void Session::add_collector(Concern concern, std::unique_ptr<Collector> collector) {
  kinds_.fetch_or(collector->kinds(), std::memory_order_release);
  collectors_[concern] = std::move(collector);
  for (size_t kind = 0; kind < by_kind_.size(); ++kind) {
    size_t n = 0;
    for (const auto& c : collectors_) {
      if (c && (c->kinds() & (uint32_t{1} << kind)) != 0) by_kind_[kind][n++] = c.get();
    }
  }
}

void Session::collect(const Record& record) {
  const uint32_t kind = record_bit(record);
  if ((kinds_.load(std::memory_order_acquire) & kind) == 0) return;
  // Kernel records on for another session: this one keeps region cycles only, as it started
  // (its kernel boxes come from the CTAs' extent).
  if (kind == record_bit<KernelDone>() && !kernel_records_) return;
  std::lock_guard lock(mu);
  placed_.tree = nullptr;
  for (Collector* const* c = by_kind_[record.index()].data(); *c != nullptr; ++c)
    (*c)->collect(record);
}

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

std::vector<uint32_t> Session::live_phases() const {
  std::vector<uint32_t> out;
  for (const auto& [phase, tree] : trees_)
    out.push_back(phase);
  return out;
}

void Session::clear_phases(uint32_t phase, bool up_to) {
  if (pc_) pc_->forget_phases(phase, up_to);
  device_sites_.forget_phases(phase, up_to);
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

TraceStore* Session::trace_for(const LaunchTag& tag) {
  if (!trace_ || trace_finished_) return nullptr;
  if (!trace_per_phase_) return trace_.get();
  uint32_t phase = phase_for(tag);
  // A phase already written takes no more events.
  return phase == current_phase() ? trace_.get() : phase_traces_.store(phase);
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
  if (!collectors_[kTrace]) add_collector(kTrace, std::make_unique<TraceCollector>(*this));
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
    e.thread = r.warp & 0xffffu;
    if (r.async) e.thread |= ((r.end_warp & 0x7fffu) + 1) << kTraceAsyncEndShift;
    e.flags = static_cast<uint16_t>(std::min<uint32_t>(r.group_warps, 0xffffu));
    e.op = b.kernel;
    e.launch_ns = r.finalize_ns;
    e.reserved = r.clock_mhz;
    trace_->add(e);
  }
}

void Session::add_metrics(ContextId ctx, ContextId python,
                          std::span<const std::pair<NameId, MetricValue>> metrics) {
  std::lock_guard lock(mu);
  if (!data_.tree) return;  // a trace-only session has no tree to hold scope metrics
  CallTree& t = tree();
  CallTree::NodeId node =
      t.node_for_context(python_context_ && python != kRootContext ? python : ctx);
  for (const auto& [name, value] : metrics)
    t.add_metric(node, name, value);
}

bool Session::add_device_slot_value(uint32_t slot, NameId metric, const MetricValue& value) {
  std::lock_guard lock(mu);
  return device_sites_.place(slot, metric, value,
                             [this](uint32_t phase) { return phase_tree(phase); });
}

PcAttribution::TreeOf Session::pc_tree_of() {
  // UINT32_MAX: the current phase (where samples of unknown functions go).
  return [this](uint32_t phase) -> CallTree* {
    if (!data_.tree) return nullptr;
    return phase == UINT32_MAX ? &tree() : phase_tree(phase);
  };
}

void Session::settle_pc_samples() {
  if (!pc_ || !data_.tree) return;
  pc_->distribute(pc_tree_of(), /*final=*/true);
  pc_->write_counters(tree());
}

}  // namespace proton
