// One profiling session: its configuration, its call trees (one per phase), its trace, its
// output paths.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "attribution/kernel_record.h"
#include "attribution/launch_stage.h"
#include "attribution/record.h"
#include "common/ids.h"
#include "data/call_tree.h"
#include "data/comm_overlap.h"
#include "data/counter_batch.h"
#include "data/counter_join.h"
#include "data/counter_split.h"
#include "data/counter_track.h"
#include "data/device_metric_sites.h"
#include "data/pc_attribution.h"
#include "data/region_metrics.h"
#include "io/phase_traces.h"
#include "options/session_options.h"
#include "session/collector.h"
#include "session/region_alignment.h"

namespace proton {

class ChromeTraceWriter;
class TraceStore;
struct TraceClock;

class Session {
 public:
  /// `epoch` is the record processor's phase epoch now: phase 0 starts there.
  Session(SessionId id, SessionOptions options, uint32_t epoch = 0);
  /// Tests: the options of `config` with no environment. Throws std::invalid_argument for a bad
  /// argument.
  Session(SessionId id, const SessionConfig& config, uint32_t epoch = 0);
  ~Session();

  SessionId id() const { return id_; }
  const SessionOptions& options() const { return options_; }
  const SessionConfig& config() const { return options_.config; }
  const DataKinds& data() const { return options_.data; }
  /// backend="instrumentation": the instrumentation runtime keeps a pool for this session.
  bool instrumented() const { return std::holds_alternative<InstrumentationMode>(options_.mode); }
  const PeriodicFlushing& periodic_flushing() const { return flushing_; }
  /// Output file for `format` ("hatchet" -> name + ".hatchet"; a known extension on the name is
  /// replaced). With `phase` >= 0: name.part_<phase>.<ext>, triton.profiler's phase files.
  std::string output_path(std::string_view format, int64_t phase = -1) const;

  /// Hands one record to each of the session's collectors that takes its kind, in their order
  /// (the call tree first: it places a kernel for the others), taking mu once; a session that
  /// collects no such kind returns without it. Kernel records are left alone by a session that
  /// keeps region cycles only (they are on for another session).
  void collect(const Record& record);
  /// Adds `value` of `metric`, read back from device accumulator `slot` (launch_metadata
  /// tensors), to the kernel nodes that slot's launches reached (takes mu). False when none
  /// did. Throws MetricTypeError.
  bool add_device_slot_value(uint32_t slot, NameId metric, const MetricValue& value);
  /// Adds flexible metrics to the node of context `ctx`, or of `python` in a context="python"
  /// session when it is not kRootContext (takes mu). Throws MetricTypeError.
  void add_metrics(ContextId ctx, ContextId python,
                   std::span<const std::pair<NameId, MetricValue>> metrics);

  /// Guards the phase trees, the trace, the collectors, dropped and unattributed. Taken by the
  /// record thread per delivery, by user threads adding scope metrics and by decoder threads
  /// adding regions; never held across a backend call.
  std::mutex mu;
  /// The current phase's tree (requires mu). Recreated empty if the phase was cleared.
  CallTree& tree();

  // Phases (all require mu). Phase p holds the kernels whose tags the record processor
  // stamped with an epoch in [phase_start(p), phase_start(p + 1)).
  uint32_t current_phase() const { return static_cast<uint32_t>(phase_starts_.size() - 1); }
  uint32_t phase_start(uint32_t phase) const { return phase_starts_[phase]; }
  /// Opens phase current_phase() + 1 at `epoch` and returns it.
  uint32_t begin_phase(uint32_t epoch);
  /// The tree of `phase`, nullptr when it was cleared or written out.
  CallTree* phase_tree(uint32_t phase) {
    auto it = trees_.find(phase);
    return it == trees_.end() ? nullptr : it->second.get();
  }
  /// Phases that still hold a tree, oldest first.
  std::vector<uint32_t> live_phases() const;
  /// Frees `phase` (or every phase up to it); clearing the current phase empties it.
  void clear_phases(uint32_t phase, bool up_to);

  /// The trace (nullptr unless data includes "trace"); requires mu.
  TraceStore* trace() { return trace_.get(); }
  /// Starts recording the trace: ts 0 is `clock`; kernel times minus `gpu_offset_ns` are on
  /// the steady clock.
  /// `kernel_boxes`: kernel records will come (a GPU backend running with them), so regions
  /// wait for their kernel's box; false: regions are placed by the GPU's global timer at once.
  /// Adds the trace's collector (requires mu once records may come).
  void start_trace(const TraceClock& clock, int64_t gpu_offset_ns, bool kernel_boxes = true);
  /// Closes open scopes at `now_ns`, writes the trace file (requires mu). Throws
  /// std::runtime_error when it cannot be written.
  void finish_trace(uint64_t now_ns);
  bool trace_finished() const { return trace_finished_; }
  /// Whether this session awaits records that a flush would bring (its collectives' exposed
  /// time, data/comm_overlap.h) since the last call. Any thread.
  bool take_records_wanted() { return records_wanted_.exchange(false, std::memory_order_relaxed); }
  /// periodic_flushing:format=chrome_trace: writes the trace of `phase`, which has completed,
  /// to name.part_<phase>.chrome_trace (requires mu; no-op otherwise). Throws as finish_trace.
  void finish_phase_trace(uint32_t phase, uint64_t now_ns);
  const PhaseTraces& phase_traces() const { return phase_traces_; }  // requires mu

  // PC sampling (mode="pcsampling"): samples wait in pc_ until their kernels' time is known
  // (data/pc_attribution.h). All require mu except pc_sampling().
  bool pc_sampling() const { return pc_ != nullptr; }
  /// Places every waiting sample and writes the sampling counters (before a tree is encoded).
  void settle_pc_samples();
  const PcAttribution* pc_attribution() const { return pc_.get(); }

  /// Decides every collective still waiting for the compute beside it and puts its
  /// "exposed_comm (ns)" on its node (data/comm_overlap.h; before a tree is encoded).
  void settle_comm();

  /// Always-on windows kept as phases of one profile (control/): each phase's window number
  /// and kept steps, written on that phase's root instead of the config's (requires mu).
  struct PhaseWindow {
    int64_t window = -1;
    int64_t first_step = -1;
    int64_t last_step = -1;
  };
  std::map<uint32_t, PhaseWindow> phase_windows;

  uint64_t dropped_records = 0;
  uint64_t unattributed_kernels = 0;
  uint64_t late_kernels = 0;  // kernels of phases already cleared or written out

  // Hardware counters (mode="counters", data/counter_config.h), set up by Runtime::start before
  // the session is active. PM samples are split over the kernels that ran in them
  // (CounterSplit) for per-kernel values, and kept for a trace's counter tracks; Range-Profiler
  // values per launch meet their kernel records in a CounterJoin.
  /// `per_launch`: Range-Profiler values come; `samples`: PM samples come (their per-kernel
  /// values are then named "pm:<metric>" when `per_launch` is on too).
  void enable_counters(bool per_launch, bool samples);
  bool counters_enabled() const {
    return counters_ != nullptr || counter_track_ != nullptr || split_ != nullptr;
  }
  /// End of a flush: kernels still waiting for Range-Profiler values get none; every kernel
  /// delivered so far gets its share of the samples received so far (takes mu).
  void settle_counters();
  const CounterJoin* counter_join() const { return counters_.get(); }         // requires mu
  const CounterTrack* counter_track() const { return counter_track_.get(); }  // requires mu
  const CounterSplit* counter_split() const { return split_.get(); }          // requires mu

 private:
  friend class TreeCollector;
  friend class RegionCollector;
  friend class PcCollector;
  friend class CounterCollector;
  friend class TraceCollector;
  // The collectors, one per concern, in delivery order; null where the session's options do
  // not ask for that concern (counters and the trace are added once they start, under mu).
  enum Concern : uint8_t { kTree, kRegions, kPc, kCounters, kTrace, kConcerns };
  std::array<std::unique_ptr<Collector>, kConcerns> collectors_;
  // Per record kind, the collectors that take it in delivery order, null-terminated: what
  // collect() walks (requires mu).
  std::array<std::array<Collector*, kConcerns + 1>, std::variant_size_v<Record>> by_kind_{};
  // The record kinds some collector takes (record_bit), read without mu.
  std::atomic<uint32_t> kinds_{0};
  void add_collector(Concern concern, std::unique_ptr<Collector> collector);  // requires mu
  // Where the tree collector put the kernel being delivered (requires mu): the later
  // collectors of the same record (PC samples, counters) hang their data on that node.
  struct Placed {
    CallTree* tree = nullptr;  // null: no tree holds this kernel
    uint32_t phase = 0;
    CallTree::NodeId node = CallTree::kRoot;
  };
  Placed placed_;

  void attach_split(bool final);  // requires mu
  // The phase a tag's epoch falls in (requires mu). Stamps are epochs mod 2^24, never newer
  // than the current epoch: the full value is recovered first.
  uint32_t phase_for(const LaunchTag& tag) const {
    uint32_t now = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
    uint32_t epoch = now - ((now - tag_epoch(tag)) & kTagEpochMask);
    auto after = std::upper_bound(phase_starts_.begin(), phase_starts_.end(), epoch);
    return static_cast<uint32_t>(
        after == phase_starts_.begin() ? 0 : after - phase_starts_.begin() - 1);
  }
  std::unique_ptr<CounterJoin> counters_;
  const CounterSchema* counter_schema_ = nullptr;    // of the last batch (the backend keeps it)
  std::unique_ptr<CounterTrack> counter_track_;      // data="trace": the samples, for tracks
  std::unique_ptr<CounterSplit> split_;              // data="tree": per-kernel values
  bool split_prefixed_ = false;                      // its metrics are named "pm:<metric>"
  std::unique_ptr<CounterSchema> split_schema_;      // the sampled metrics as tree metrics
  NameId split_samples_id_ = kNoName;                // "counter samples"
  NameId split_shared_id_ = kNoName;                 // "counter samples shared"
  CounterSplit::Stats split_written_;                // stats already on the root
  std::vector<CounterSplit::Result> split_results_;  // attach_split's scratch
  std::vector<double> split_values_;
  uint64_t trace_base_steady_ns_ = 0;  // the trace's ts 0, for counter-track events

  PcAttribution::TreeOf pc_tree_of();  // requires mu while the result is used
  // The context a kernel of `tag` lands in: its Python call path for context="python".
  ContextId context_of(const LaunchTag& tag) const {
    return python_context_ && tag.python_context != kRootContext ? tag.python_context : tag.context;
  }
  TraceStore* trace_for(const LaunchTag& tag);  // the store its events go to, or nullptr

  SessionId id_;
  SessionOptions options_;
  const SessionConfig& config_ = options_.config;
  const DataKinds& data_ = options_.data;
  PeriodicFlushing flushing_;
  bool python_context_;  // context == "python", not compared per kernel (memcmp was ~9%)
  bool kernel_records_;  // config_.kernel_records, not read through the options per kernel
  std::vector<uint32_t> phase_starts_;                   // phase -> first epoch
  std::map<uint32_t, std::unique_ptr<CallTree>> trees_;  // live phases
  std::unique_ptr<ChromeTraceWriter> trace_writer_;
  std::unique_ptr<TraceStore> trace_;
  // periodic_flushing:format=chrome_trace: trace_ holds the current phase; closed ones wait here.
  bool trace_per_phase_ = false;
  TraceClock trace_clock_;
  PhaseTraces phase_traces_;
  RegionAlignment region_alignment_;  // intra-kernel regions waiting for their kernel (mu)
  bool kernel_boxes_ = true;          // start_trace's: regions wait for kernel records
  // Adds a region batch to the trace with its first region at `kernel_start_ns` (requires mu).
  void emit_regions(const RegionAlignment::Batch& b, uint64_t kernel_start_ns);
  // A GPU timestamp (CUPTI's kernel records, the global timer) on the trace clock.
  uint64_t trace_ns(uint64_t gpu_ns) const;
  int64_t gpu_offset_ns_ = 0;
  uint64_t last_launch_ = 0;  // correlation of the last traced kernel (graph fan-out)
  bool trace_finished_ = false;
  std::unique_ptr<PcAttribution> pc_;  // guarded by mu; null unless mode="pcsampling"
  DeviceMetricSites device_sites_;     // guarded by mu
  CommOverlap comm_;                   // collectives' exposed time (mu)
  // comm_ awaits records held back in CUPTI's buffers: the runtime asks the backend for a
  // flush at the end of the batch (take_records_wanted).
  std::atomic<bool> records_wanted_{false};
  void place_exposed_comm();  // comm_'s decided collectives onto their nodes (mu)
};

}  // namespace proton
