// Chrome trace JSON output (Perfetto, chrome://tracing), written as a stream.
//
//   {"traceEvents": [ ...events... ], "displayTimeUnit": "ns",
//    "baseTimeNanoseconds": <wall-clock ns of ts 0>,
//    "otherData": {"proton_base_time_ns": ..., "proton_base_steady_ns": ..., ...}}
//
// Lanes: one process per GPU (pid = device id, named "GPU <d>") with one thread per stream
// (tid = stream id); one process for the CPU (pid = the OS pid) with one thread per profiled
// thread (tid = Proton's small thread index). Kernels and scopes are complete ("X") events in
// µs relative to the session's trace start; each kernel with a known launch gets a zero-length
// "launch" slice on its thread and a flow arrow ("s" -> "f", bound to the enclosing slices).
// Scope args carry the call path and "scope_id" (the scope's instance, numbered per trace); a
// scope given metrics is written as triton.profiler writes it, a "metric" event named
// "<scope>: <name, value>, ..." with the values as strings in "metrics".
// Kernel args carry the call path ("call_stack": "ROOT", the scopes, the kernel name, as
// triton.profiler writes it), the correlation id and "time (ns)". A kernel whose launch carried
// launch metadata (hook="triton", TraceEvent::op) is named after it, as its call-tree node is,
// keeps its own name in "kernel" when that differs, and carries the op's metrics ("flops16",
// "bytes", ...) with the types the tree gives them.
//
// Events are appended as they leave the TraceStore (spilled chunks during the run, the resident
// tail at finalize) into "<path>.partial"; finish() adds lane names and the trailer and renames
// the file over <path>, so a reader never sees half a trace under the final name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "data/trace_store.h"

namespace proton {

struct TraceClock {
  uint64_t base_steady_ns = 0;  // steady-clock ns written as ts 0
  uint64_t base_wall_ns = 0;    // the same instant as ns since the Unix epoch (CLOCK_REALTIME)
  // GPU timestamp minus steady clock, already subtracted from every kernel's ts; written as
  // "proton_gpu_offset_ns" so a merge of ranks can show the correction each rank used.
  int64_t gpu_offset_ns = 0;
};

/// What finish() reports about collection inside the file.
struct TraceSummary {
  uint64_t recorded_events = 0;
  uint64_t dropped_events = 0;     // pushed out by the budget (flight recorder)
  uint64_t dropped_before_ns = 0;  // steady ns of the newest dropped event
  uint64_t budget_bytes = 0;       // 0 = unbounded
  uint64_t dropped_records = 0;    // activity records the backend lost
  uint64_t unattributed_kernels = 0;
  uint64_t unfinished_scopes = 0;  // scopes still open at finalize (closed there)
  uint64_t write_errors = 0;       // events lost because the partial file could not be written
};

class ChromeTraceWriter {
 public:
  ChromeTraceWriter(std::string path, TraceClock clock);
  ~ChromeTraceWriter();  // removes an unfinished partial file
  ChromeTraceWriter(const ChromeTraceWriter&) = delete;
  ChromeTraceWriter& operator=(const ChromeTraceWriter&) = delete;

  /// Appends events. Never throws (it runs on the record thread): a write failure is counted
  /// and reported by finish().
  void append(std::span<const TraceEvent> events) noexcept;
  /// Writes lane names and the trailer, then renames the partial file over the output path.
  /// Throws std::runtime_error naming the path when the file cannot be written.
  void finish(const TraceSummary& summary);

  /// Appends ready-made JSON event objects ("{...}", no separators), e.g. the counter tracks of
  /// io/counter_track_writer.h. Never throws; failures count like append()'s.
  void append_raw(const std::vector<std::string>& events) noexcept;

  const std::string& path() const { return path_; }
  /// Where finish() puts the file (the partial file keeps its name until then).
  void set_path(std::string path) { path_ = std::move(path); }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  void append_event(const TraceEvent& e);
  void append_run_fields();  // gpu offset and the rank block (io/run_info.h) in otherData
  // Intra-kernel regions (chrome_trace_regions.cpp): one lane per (SM, CTA, warp) in the GPU's
  // process, next to its stream lanes.
  void append_region(const TraceEvent& e);
  void append_region_lane_names();
  void append_time(uint64_t ns);  // µs relative to the base, 3 decimals
  void append_cpu_place(uint64_t thread, uint64_t ts_ns);
  void append_gpu_place(uint64_t device, uint64_t stream, uint64_t ts_ns);
  void append_lane_time(uint64_t tid, uint64_t ts_ns);
  void append_duration(uint64_t ns);  // µs, 3 decimals
  const std::string& call_stack(ContextId ctx);
  // A kernel event's call_stack as triton.profiler writes it: ["ROOT", scopes..., kernel].
  void append_kernel_call_stack(ContextId ctx, NameId kernel);
  const std::string& quoted_name(NameId name);
  struct OpArgs {
    NameId name = kNoName;  // display name (kNoName: the kernel keeps its own)
    std::string metrics;    // ,"metric":value... ready to append to the args
  };
  const OpArgs& op_args(uint32_t op);
  // Metrics added to a scope, as triton.profiler writes them on the scope's event.
  struct ScopeMetricArgs {
    std::string label;    // ": <name, value>, ..." appended to the scope's name (unescaped)
    std::string metrics;  // {"name":"value",...}
  };
  // Built per event, not cached: a set's id is reused once the stores let go of it.
  const ScopeMetricArgs& scope_metric_args(uint32_t set);
  void append_scope(const TraceEvent& e);
  // Captured scopes of replayed CUDA graphs on their own lane per stream
  // (chrome_trace_graph_lanes.cpp).
  struct GraphLane {
    std::vector<std::pair<NameId, uint64_t>> open;  // frames from "<captured_at>" down, start
    uint64_t last_end_ns = 0;                       // latest end of a replayed kernel so far
  };
  const std::vector<NameId>& graph_path(ContextId ctx);  // empty: not a replayed kernel's
  void track_graph_scopes(const TraceEvent& e);
  void close_graph_scopes(uint32_t device, uint32_t stream, GraphLane& lane, size_t keep);
  void finish_graph_lanes();  // closes what is open, names the lanes
  bool open_file();
  void flush_buffer();

  std::string path_;
  std::string partial_;
  TraceClock clock_;
  std::string cpu_pid_;  // the CPU process's pid, as text
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  std::string failure_;
  uint64_t lost_events_ = 0;
  std::string buf_;
  uint64_t bytes_written_ = 0;
  bool first_event_ = true;
  uint64_t next_flow_id_ = 1;
  std::unordered_map<ContextId, std::string> stacks_;  // call_stack JSON arrays per context
  std::unordered_map<NameId, std::string> names_;      // quoted, escaped names
  std::unordered_map<uint32_t, OpArgs> ops_;           // per launch-metadata op
  ScopeMetricArgs scope_args_;                        // the last scope event's, its capacity reused
  std::map<uint32_t, std::set<uint32_t>> gpu_lanes_;  // device -> streams seen
  std::set<uint32_t> cpu_lanes_;                      // thread indices seen
  // device -> (SM, CTA, warp) key -> lane (chrome_trace_regions.cpp)
  struct RegionLane {
    uint64_t tid = 0;
    uint32_t group_warps = 1;  // warps the lane stands for (granularity)
  };
  std::map<uint32_t, std::map<uint64_t, RegionLane>> region_lanes_;
  std::map<std::pair<uint32_t, uint32_t>, GraphLane> graph_lanes_;  // (device, stream)
  std::unordered_map<ContextId, std::vector<NameId>> graph_paths_;  // per kernel context
  std::unordered_map<NameId, size_t> region_colors_;  // region name -> its color's index
};

}  // namespace proton
