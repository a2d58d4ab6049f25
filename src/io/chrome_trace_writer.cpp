#include "io/chrome_trace_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/name_table.h"
#include "common/version.h"
#include "context/context_tree.h"
#include "context/launch_ops.h"
#include "context/scope_metric_sets.h"
#include "data/metric.h"
#include "format/json_writer.h"
#include "format/metric_value_writer.h"
#include "io/run_info.h"

namespace proton {

namespace {

constexpr size_t kFlushBytes = 1u << 20;  // one write() per MB keeps spilling cheap

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

// Keys a kernel event's args always or sometimes carry; a launch-metadata metric of the same
// name is left out of the args rather than written as a duplicate key.
bool own_kernel_arg(std::string_view key) {
  return key == "call_stack" || key == "correlation" || key == "time (ns)" || key == "kernel" ||
         key == "unattributed";
}

// A metric value as triton.profiler prints it in a scope's metric event: integers in decimal,
// floats with six decimals (C's "%f"), strings as they are, lists as "[a,b]".
void append_metric_text(std::string& out, const MetricValue& value) {
  char buf[64];
  auto number = [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), double>) {
      std::snprintf(buf, sizeof(buf), "%f", v);
    } else {
      std::snprintf(buf, sizeof(buf), "%" PRId64, v);
    }
    out += buf;
  };
  auto element = [&](auto v) {
    if constexpr (std::is_same_v<decltype(v), double>) {
      std::snprintf(buf, sizeof(buf), "%g", v);
    } else {
      std::snprintf(buf, sizeof(buf), "%" PRId64, v);
    }
    out += buf;
  };
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out += v;
        } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
          number(v);
        } else {
          out.push_back('[');
          for (size_t i = 0; i < v.size(); ++i) {
            if (i) out.push_back(',');
            element(v[i]);
          }
          out.push_back(']');
        }
      },
      value);
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::string path, TraceClock clock)
    : path_(std::move(path)),
      partial_(path_ + ".partial." + std::to_string(::getpid())),
      clock_(clock),
      cpu_pid_(std::to_string(::getpid())) {
  buf_.reserve(kFlushBytes + 4096);
}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(partial_.c_str());
  }
}

bool ChromeTraceWriter::open_file() {
  if (file_ != nullptr) return true;
  if (failed_) return false;
  file_ = std::fopen(partial_.c_str(), "wb");
  if (file_ == nullptr) {
    failed_ = true;
    failure_ = std::strerror(errno);
    return false;
  }
  // No stdio buffer (buf_ already batches a MB per write): bytes left in one at a fork() would be
  // written again by the child's exit(), into the file the parent is still writing.
  std::setvbuf(file_, nullptr, _IONBF, 0);
  return true;
}

void ChromeTraceWriter::flush_buffer() {
  if (buf_.empty() || !open_file()) return;
  if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    failed_ = true;
    failure_ = std::strerror(errno);
  }
  bytes_written_ += buf_.size();
  buf_.clear();
}

void ChromeTraceWriter::append_time(uint64_t ns) {
  if (ns < clock_.base_steady_ns) {
    buf_.push_back('-');
    append_duration(clock_.base_steady_ns - ns);
  } else {
    append_duration(ns - clock_.base_steady_ns);
  }
}

void ChromeTraceWriter::append_duration(uint64_t ns) {
  // Fixed-point µs with 3 decimals: exact for ns inputs, and no floating-point formatting.
  append_uint(buf_, ns / 1000);
  char frac[4] = {'.', static_cast<char>('0' + ns / 100 % 10),
                  static_cast<char>('0' + ns / 10 % 10), static_cast<char>('0' + ns % 10)};
  buf_.append(frac, 4);
}

const std::string& ChromeTraceWriter::call_stack(ContextId ctx) {
  auto [it, inserted] = stacks_.try_emplace(ctx);
  if (inserted) {
    std::vector<NameId> path;
    ContextTree::global().path(ctx, path);
    std::string& s = it->second;
    s.push_back('[');
    for (size_t i = 0; i < path.size(); ++i) {
      if (i) s.push_back(',');
      JsonWriter::append_string(s, NameTable::global().name(path[i]));
    }
    s.push_back(']');
  }
  return it->second;
}

void ChromeTraceWriter::append_kernel_call_stack(ContextId ctx, NameId kernel) {
  // triton.profiler's kernel events list the whole tree path: "ROOT", the scopes, then the
  // kernel's own (possibly launch-metadata) name. Scripts index it from either end.
  const std::string& scopes = call_stack(ctx);  // "[...]"
  buf_ += "[\"ROOT\"";
  if (scopes.size() > 2) {
    buf_.push_back(',');
    buf_.append(scopes, 1, scopes.size() - 2);
  }
  buf_.push_back(',');
  buf_ += quoted_name(kernel);
  buf_.push_back(']');
}

const std::string& ChromeTraceWriter::quoted_name(NameId name) {
  auto [it, inserted] = names_.try_emplace(name);
  if (inserted) {
    JsonWriter::append_string(it->second,
                              name == kNoName ? "<unknown>" : NameTable::global().name(name));
  }
  return it->second;
}

const ChromeTraceWriter::OpArgs& ChromeTraceWriter::op_args(uint32_t op) {
  auto [it, inserted] = ops_.try_emplace(op);
  if (inserted) {
    // Ops are interned by content, so this cache grows with distinct (name, metrics), not with
    // launches. Entries are never freed, so an op is resolvable however late its event is
    // written (a spilled chunk, finalize).
    const LaunchOp& entry = LaunchOps::global().get(op);
    it->second.name = entry.name;
    std::string& s = it->second.metrics;
    for (const auto& [metric, value] : entry.metrics) {
      std::string_view key = NameTable::global().name(metric);
      if (own_kernel_arg(key)) continue;
      s.push_back(',');
      JsonWriter w(s);
      w.key(key);
      write_metric_value(w, value);
    }
  }
  return it->second;
}

const ChromeTraceWriter::ScopeMetricArgs& ChromeTraceWriter::scope_metric_args(uint32_t set) {
  // Sorted by name, each as a string, as triton.profiler writes them (names without their
  // "(exc)"/"(pty)" tag, as in the tree).
  std::vector<std::pair<std::string_view, const MetricValue*>> sorted;
  for (const auto& [metric, value] : ScopeMetricSets::global().get(set))
    sorted.emplace_back(metric_output_name(NameTable::global().name(metric)), &value);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string& label = scope_args_.label;
  std::string& metrics = scope_args_.metrics;
  label = ": ";
  metrics.assign(1, '{');
  std::string text;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0 && sorted[i].first == sorted[i - 1].first) continue;  // one key per name
    text.clear();
    append_metric_text(text, *sorted[i].second);
    if (i) {
      label += ", ";
      metrics.push_back(',');
    }
    label.append("<").append(sorted[i].first).append(", ").append(text).append(">");
    JsonWriter::append_string(metrics, sorted[i].first);
    metrics.push_back(':');
    JsonWriter::append_string(metrics, text);
  }
  metrics.push_back('}');
  return scope_args_;
}

// A CPU scope. With metrics added to it, triton.profiler's metric event: named
// "<scope>: <name, value>, ...", category "metric", the metrics in args.metrics (as strings).
// args.scope_id numbers the scope's instances within the trace.
void ChromeTraceWriter::append_scope(const TraceEvent& e) {
  uint64_t dur = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
  const ScopeMetricArgs* m = e.op != 0 ? &scope_metric_args(e.op) : nullptr;
  if (m != nullptr && m->metrics.size() <= 2) m = nullptr;  // no metrics after all: "{}"
  if (m == nullptr) {
    buf_ += "{\"ph\":\"X\",\"cat\":\"scope\",\"name\":";
    buf_ += quoted_name(e.name);
  } else {
    buf_ += "{\"ph\":\"X\",\"cat\":\"metric\",\"name\":";
    std::string name(e.name == kNoName ? std::string_view("<unknown>")
                                       : NameTable::global().name(e.name));
    name += m->label;
    JsonWriter::append_string(buf_, name);
  }
  append_cpu_place(e.thread, e.start_ns);
  buf_ += ",\"dur\":";
  append_duration(dur);
  buf_ += ",\"args\":{\"call_stack\":";
  buf_ += call_stack(e.context);
  buf_ += ",\"scope_id\":";
  append_uint(buf_, e.correlation);
  if (m != nullptr) {
    buf_ += ",\"metrics\":";
    buf_ += m->metrics;
  }
  buf_ += "}}";
}

// Every event starts with where (process, lane) and when; CPU events live in this process's
// pid, GPU events in one pid per device with a lane per stream.
void ChromeTraceWriter::append_cpu_place(uint64_t thread, uint64_t ts_ns) {
  buf_ += ",\"pid\":";
  buf_ += cpu_pid_;
  append_lane_time(thread, ts_ns);
}

void ChromeTraceWriter::append_gpu_place(uint64_t device, uint64_t stream, uint64_t ts_ns) {
  buf_ += ",\"pid\":";
  append_uint(buf_, device);
  append_lane_time(stream, ts_ns);
}

void ChromeTraceWriter::append_lane_time(uint64_t tid, uint64_t ts_ns) {
  buf_ += ",\"tid\":";
  append_uint(buf_, tid);
  buf_ += ",\"ts\":";
  append_time(ts_ns);
}

void ChromeTraceWriter::append_event(const TraceEvent& e) {
  auto sep = [&] {
    if (!first_event_) buf_.push_back(',');
    first_event_ = false;
    buf_.push_back('\n');
  };
  if (e.kind == TraceEvent::kRegion) {
    append_region(e);
    return;
  }
  uint64_t dur = e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0;
  if (e.kind == TraceEvent::kScope) {
    cpu_lanes_.insert(e.thread);
    sep();
    append_scope(e);
    return;
  }
  if (e.kind == TraceEvent::kHostCall) {
    // A synchronize or blocking copy: a box on its thread's lane, as long as the host waited.
    cpu_lanes_.insert(e.thread);
    sep();
    buf_ += "{\"ph\":\"X\",\"cat\":\"host_call\",\"name\":";
    buf_ += quoted_name(e.name);
    append_cpu_place(e.thread, e.start_ns);
    buf_ += ",\"dur\":";
    append_duration(dur);
    buf_ += ",\"args\":{\"call_stack\":";
    buf_ += call_stack(e.context);
    if (e.correlation != 0) {
      buf_ += ",\"bytes\":";
      append_uint(buf_, e.correlation);
    }
    if (e.flags & 1) buf_ += ",\"finishes_copy\":true";
    buf_ += "}}";
    return;
  }
  gpu_lanes_[e.device].insert(e.stream);
  if (!(e.flags & kTraceFromRegions)) track_graph_scopes(e);
  uint64_t start = e.start_ns;
  // Launch metadata (hook="triton") names the event and adds its metrics, as in the tree.
  const OpArgs* op = e.op != 0 ? &op_args(e.op) : nullptr;
  bool renamed = op != nullptr && op->name != kNoName && op->name != e.name;
  NameId name = renamed ? op->name : e.name;
  sep();
  buf_ += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":";
  buf_ += quoted_name(name);
  append_gpu_place(e.device, e.stream, start);
  buf_ += ",\"dur\":";
  append_duration(dur);
  buf_ += ",\"args\":{\"call_stack\":";
  append_kernel_call_stack(e.context, name);
  if (e.flags & kTraceFromRegions) {
    // Not CUPTI's kernel time: the extent its CTAs' headers recorded.
    buf_ += ",\"extent\":\"first CTA start to last CTA end (GPU global timer)\"}}";
    return;
  }
  buf_ += ",\"correlation\":";
  append_uint(buf_, e.correlation);
  buf_ += ",\"time (ns)\":";
  append_uint(buf_, dur);
  if (renamed) {
    buf_ += ",\"kernel\":";  // the name the GPU ran it under
    buf_ += quoted_name(e.name);
  }
  if (op != nullptr) buf_ += op->metrics;
  if (e.flags & kTraceUnattributed) buf_ += ",\"unattributed\":true";
  buf_ += "}}";
  if (e.launch_ns == 0) return;
  cpu_lanes_.insert(e.thread);
  if (e.flags & kTraceFirstOfLaunch) {
    sep();
    buf_ += "{\"ph\":\"X\",\"cat\":\"launch\",\"name\":\"launch\"";
    append_cpu_place(e.thread, e.launch_ns);
    buf_ += ",\"dur\":0.000,\"args\":{\"correlation\":";
    append_uint(buf_, e.correlation);
    buf_ += ",\"kernel\":";
    buf_ += quoted_name(name);  // the kernel event's name, so the two are easy to match
    buf_ += "}}";
  }
  // One arrow per kernel (a graph launch fans out); ids are unique within the file.
  uint64_t id = next_flow_id_++;
  sep();
  buf_ += "{\"ph\":\"s\",\"cat\":\"flow\",\"name\":\"launch->kernel\",\"id\":";
  append_uint(buf_, id);
  append_cpu_place(e.thread, e.launch_ns);
  buf_ += ",\"bp\":\"e\"}";
  sep();
  buf_ += "{\"ph\":\"f\",\"cat\":\"flow\",\"name\":\"launch->kernel\",\"id\":";
  append_uint(buf_, id);
  append_gpu_place(e.device, e.stream, start);
  buf_ += ",\"bp\":\"e\"}";
}

void ChromeTraceWriter::append(std::span<const TraceEvent> events) noexcept {
  try {
    if (failed_) {
      lost_events_ += events.size();
      return;
    }
    if (bytes_written_ == 0 && buf_.empty()) buf_ = "{\"traceEvents\":[";
    for (const TraceEvent& e : events) {
      append_event(e);
      if (buf_.size() >= kFlushBytes) flush_buffer();
    }
    if (failed_) lost_events_ += events.size();
  } catch (...) {  // std::bad_alloc: lose this batch, keep the program alive
    failed_ = true;
    failure_ = "out of memory";
    lost_events_ += events.size();
  }
}

void ChromeTraceWriter::finish(const TraceSummary& summary) {
  if (bytes_written_ == 0 && buf_.empty()) buf_ = "{\"traceEvents\":[";
  const std::string& pid = cpu_pid_;
  auto meta = [&](const std::string& p, const std::string& tid, const char* what,
                  const std::string& arg) {
    if (!first_event_) buf_.push_back(',');
    first_event_ = false;
    buf_ += "\n{\"ph\":\"M\",\"pid\":" + p + ",\"tid\":" + tid + ",\"name\":\"" + what +
            "\",\"args\":{" + arg + "}}";
  };
  auto quoted = [](const std::string& s) {
    std::string out;
    JsonWriter::append_string(out, s);
    return out;
  };
  meta(pid, "0", "process_name", "\"name\":" + quoted("CPU (pid " + pid + ")"));
  meta(pid, "0", "process_sort_index", "\"sort_index\":0");
  for (uint32_t t : cpu_lanes_) {
    std::string tid = std::to_string(t);
    meta(pid, tid, "thread_name", "\"name\":" + quoted("thread " + tid));
    meta(pid, tid, "thread_sort_index", "\"sort_index\":" + tid);
  }
  for (const auto& [device, streams] : gpu_lanes_) {
    std::string d = std::to_string(device);
    meta(d, "0", "process_name", "\"name\":" + quoted("GPU " + d));
    meta(d, "0", "process_sort_index", "\"sort_index\":" + std::to_string(device + 1));
    for (uint32_t s : streams) {
      std::string tid = std::to_string(s);
      meta(d, tid, "thread_name",
           "\"name\":" + quoted(s == kRegionKernelLane ? std::string("kernels (CTA extent)")
                                                       : "stream " + tid));
      meta(d, tid, "thread_sort_index", "\"sort_index\":" + tid);
    }
  }
  append_region_lane_names();
  finish_graph_lanes();
  if (summary.dropped_events != 0) {
    // A global instant where the kept window starts, so the gap is visible on the timeline.
    if (!first_event_) buf_.push_back(',');
    buf_ += "\n{\"ph\":\"i\",\"s\":\"g\",\"name\":\"proton: trace budget dropped ";
    append_uint(buf_, summary.dropped_events);
    buf_ += " earlier events\",\"pid\":" + pid + ",\"tid\":0,\"ts\":";
    append_time(summary.dropped_before_ns);
    buf_ += "}";
  }
  buf_ += "\n],\"displayTimeUnit\":\"ns\",\"baseTimeNanoseconds\":";
  append_uint(buf_, clock_.base_wall_ns);
  buf_ += ",\n\"otherData\":{\"proton_format_version\":" + std::to_string(kFormatVersion) +
          ",\"proton_version\":\"" + kProtonVersion + "\"";
  auto field = [&](const char* key, uint64_t v) {
    buf_ += ",\"";
    buf_ += key;
    buf_ += "\":";
    append_uint(buf_, v);
  };
  field("proton_base_time_ns", clock_.base_wall_ns);
  field("proton_base_steady_ns", clock_.base_steady_ns);
  field("proton_recorded_events", summary.recorded_events);
  field("proton_dropped_events", summary.dropped_events);
  field("proton_trace_budget_bytes", summary.budget_bytes);
  field("proton_lost_events", lost_events_ + summary.write_errors);
  field("dropped_records", summary.dropped_records);
  field("unattributed_kernels", summary.unattributed_kernels);
  field("proton_unfinished_scopes", summary.unfinished_scopes);
  append_run_fields();
  buf_ += "}}\n";
  flush_buffer();
  if (file_ != nullptr && std::fclose(file_) != 0 && !failed_) {
    failed_ = true;
    failure_ = std::strerror(errno);
  }
  file_ = nullptr;
  if (failed_ || std::rename(partial_.c_str(), path_.c_str()) != 0) {
    std::string why = failed_ ? failure_ : std::strerror(errno);
    std::remove(partial_.c_str());
    throw std::runtime_error("cannot write trace '" + path_ + "': " + why);
  }
}

void ChromeTraceWriter::append_run_fields() {
  buf_ += ",\"proton_gpu_offset_ns\":";
  buf_ += std::to_string(clock_.gpu_offset_ns);
  RunInfo info = run_info();
  if (!info.is_rank()) return;
  buf_ += ",\"proton_rank\":" + std::to_string(info.rank);
  buf_ += ",\"proton_world_size\":" + std::to_string(info.world_size);
  if (info.local_rank >= 0) buf_ += ",\"proton_local_rank\":" + std::to_string(info.local_rank);
  buf_ += ",\"proton_host\":";
  JsonWriter::append_string(buf_, info.host);
  buf_ += ",\"proton_device\":";
  JsonWriter::append_string(buf_, info.device);
}

// Counter tracks (hardware counters): events formatted elsewhere, appended as-is.
void ChromeTraceWriter::append_raw(const std::vector<std::string>& events) noexcept {
  try {
    if (failed_) {
      lost_events_ += events.size();
      return;
    }
    if (bytes_written_ == 0 && buf_.empty()) buf_ = "{\"traceEvents\":[";
    for (const std::string& e : events) {
      if (!first_event_) buf_.push_back(',');
      first_event_ = false;
      buf_.push_back('\n');
      buf_ += e;
      if (buf_.size() >= kFlushBytes) flush_buffer();
    }
  } catch (...) {
    failed_ = true;
    failure_ = "out of memory";
    lost_events_ += events.size();
  }
}

}  // namespace proton
