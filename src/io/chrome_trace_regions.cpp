// Intra-kernel regions on the Chrome trace: each (SM, CTA, unit) gets a lane in its GPU's
// process, below the stream lanes, so Perfetto shows a kernel's box and, under it, the regions
// each warp (or warpgroup, or CTA, by the mode's granularity) ran, on one clock.
#include <iterator>
#include <string>

#include "common/name_table.h"
#include "data/region_metrics.h"
#include "format/json_writer.h"
#include "io/chrome_trace_writer.h"

namespace proton {

namespace {

// The colors triton.profiler gives regions, in turn (Chrome's reserved color names): a region
// keeps its color across the trace.
constexpr const char* kRegionColors[] = {"cq_build_passed",
                                         "cq_build_failed",
                                         "thread_state_iowait",
                                         "thread_state_running",
                                         "thread_state_runnable",
                                         "thread_state_unknown",
                                         "rail_response",
                                         "rail_idle",
                                         "rail_load",
                                         "cq_build_attempt_passed",
                                         "cq_build_attempt_failed"};

// Region lanes start far above stream ids, so the two never share a tid.
constexpr uint64_t kRegionLaneBase = uint64_t{1} << 32;

uint64_t lane_key(const TraceEvent& e, uint32_t warp) {
  return (uint64_t{e.stream & 0xffffu} << 48) | ((e.correlation & 0xffffffffu) << 16) |
         (warp & 0xffffu);
}

// "warp 5", "warps 4-5", "warpgroup 1", "warpgroups 2-3", "all warps": what one lane records.
std::string unit_label(uint32_t warp, uint32_t group) {
  if (group <= 1) return "warp " + std::to_string(warp);
  if (group >= kWholeCta) return "CTA (warp " + std::to_string(warp) + ")";
  if (group % 4 == 0 && warp % 4 == 0) {
    const uint32_t first = warp / 4;
    if (group == 4) return "warpgroup " + std::to_string(first);
    return "warpgroups " + std::to_string(first) + "-" + std::to_string(first + group / 4 - 1);
  }
  return "warps " + std::to_string(warp) + "-" + std::to_string(warp + group - 1);
}

}  // namespace

void ChromeTraceWriter::append_region(const TraceEvent& e) {
  auto& lanes = region_lanes_[e.device];
  const uint32_t warp = e.thread & 0xffffu;
  auto lane_of = [&](uint32_t w) {
    auto [it, inserted] = lanes.try_emplace(lane_key(e, w));
    if (inserted) it->second = {kRegionLaneBase + lanes.size() - 1, e.flags != 0 ? e.flags : 1u};
    return it->second.tid;
  };
  const uint64_t tid = lane_of(warp);
  // An async event (pl.start_event to pl.end_event): its slice sits on the lane of the warp that
  // started it; when another warp ended it, a zero-length slice marks the end on that warp's
  // lane and a flow arrow ("s" to "f") joins the two.
  const uint32_t end_code = e.thread >> kTraceAsyncEndShift;
  const bool async = end_code != 0;
  const uint32_t end_warp = async ? end_code - 1 : warp;
  if (!first_event_) buf_.push_back(',');
  first_event_ = false;
  // As triton.profiler writes a region: its name, a color per region and, in the args, its
  // CTA's finalization time, the clock its cycles were read at and the call path. Its category
  // is "region" (Triton's: the kernel's name, which "kernel" holds here), its lane a number.
  auto color =
      region_colors_.try_emplace(e.name, region_colors_.size() % std::size(kRegionColors)).first;
  buf_ += "\n{\"ph\":\"X\",\"cat\":\"region\",\"name\":";
  buf_ += quoted_name(e.name);
  buf_ += ",\"cname\":\"";
  buf_ += kRegionColors[color->second];
  buf_.push_back('"');
  append_gpu_place(e.device, tid, e.start_ns);
  buf_ += ",\"dur\":";
  append_duration(e.end_ns > e.start_ns ? e.end_ns - e.start_ns : 0);
  buf_ += ",\"args\":{\"Finalization Time (ns)\":";
  buf_ += std::to_string(e.launch_ns);
  if (e.reserved != 0) {
    buf_ += ",\"Frequency (MHz)\":";
    buf_ += std::to_string(e.reserved);
  }
  buf_ += ",\"kernel\":";
  buf_ += quoted_name(e.op);
  buf_ += ",\"sm\":";
  buf_ += std::to_string(e.stream);
  buf_ += ",\"cta\":";
  buf_ += std::to_string(e.correlation);
  buf_ += ",\"warp\":";
  buf_ += std::to_string(warp);
  if (e.flags > 1) {
    buf_ += ",\"warps\":";
    buf_ += std::to_string(e.flags);
  }
  if (async) {
    buf_ += ",\"is_async\":true,\"end_warp\":";
    buf_ += std::to_string(end_warp);
  }
  buf_ += ",\"call_stack\":";
  buf_ += call_stack(e.context);
  buf_ += "}}";
  if (!async || end_warp == warp) return;
  const uint64_t end_ns = e.end_ns > e.start_ns ? e.end_ns : e.start_ns;
  const uint64_t end_tid = lane_of(end_warp);
  const std::string id = std::to_string(next_flow_id_++);
  buf_ += ",\n{\"ph\":\"X\",\"cat\":\"region\",\"name\":";
  buf_ += quoted_name(e.name);
  buf_ += ",\"cname\":\"";
  buf_ += kRegionColors[color->second];
  buf_.push_back('"');
  append_gpu_place(e.device, end_tid, end_ns);
  buf_ += ",\"dur\":0,\"args\":{\"is_async\":true,\"async_end\":true,\"warp\":";
  buf_ += std::to_string(end_warp);
  buf_ += ",\"start_warp\":";
  buf_ += std::to_string(warp);
  buf_ += "}}";
  // The arrow: out of the start's slice, into the end's ("bp":"e": the slice at its time).
  buf_ += ",\n{\"ph\":\"s\",\"cat\":\"async\",\"id\":" + id + ",\"name\":";
  buf_ += quoted_name(e.name);
  append_gpu_place(e.device, tid, e.start_ns);
  buf_ += "}";
  buf_ += ",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"async\",\"id\":" + id + ",\"name\":";
  buf_ += quoted_name(e.name);
  append_gpu_place(e.device, end_tid, end_ns);
  buf_ += "}";
}

void ChromeTraceWriter::append_region_lane_names() {
  for (const auto& [device, lanes] : region_lanes_) {
    std::string pid = std::to_string(device);
    for (const auto& [key, lane] : lanes) {
      const uint64_t tid = lane.tid;
      std::string name = "SM " + std::to_string(key >> 48) + " / CTA " +
                         std::to_string((key >> 16) & 0xffffffffu) + " / " +
                         unit_label(static_cast<uint32_t>(key & 0xffffu), lane.group_warps);
      std::string quoted;
      JsonWriter::append_string(quoted, name);
      for (const auto& [what, arg] :
           {std::pair<const char*, std::string>{"thread_name", "\"name\":" + quoted},
            {"thread_sort_index", "\"sort_index\":" + std::to_string(tid)}}) {
        if (!first_event_) buf_.push_back(',');
        first_event_ = false;
        buf_ += "\n{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + std::to_string(tid) +
                ",\"name\":\"" + what + "\",\"args\":{" + arg + "}}";
      }
    }
  }
}

}  // namespace proton
