// Captured scopes of replayed CUDA graphs on GPU time, as triton.profiler's trace shows them.
//
// A kernel replayed from a graph carries its capture-site path ("<captured_at>", then the
// scopes, states or Python frames of its capture) but ran long after those scopes closed on the
// CPU. Each stream with such kernels gets a second lane in its GPU's process, "Graph: stream N",
// on which every frame from "<captured_at>" down is a slice spanning the replayed kernels under
// it: walking the stream's replayed kernels in order, a frame opens with the first kernel under
// it and closes, at the latest end seen so far, when a kernel's path leaves it (frames compared
// by name, as Triton does). Other kernels on the stream leave the open frames alone; the last
// ones close at the end of the trace. Frames of the hidden launch-metadata state (work done for
// metrics) end the path there.
#include <string>
#include <string_view>
#include <vector>

#include "common/name_table.h"
#include "context/context_tree.h"
#include "format/json_writer.h"
#include "io/chrome_trace_writer.h"

namespace proton {

namespace {

// Graph lanes sit above the stream ids and below the region lanes (1 << 32).
constexpr uint64_t kGraphLaneBase = uint64_t{1} << 31;
constexpr std::string_view kCaptureFrame = "<captured_at>";
constexpr std::string_view kMetadataFrame = "__proton_launch_metadata";

}  // namespace

const std::vector<NameId>& ChromeTraceWriter::graph_path(ContextId ctx) {
  auto [it, inserted] = graph_paths_.try_emplace(ctx);
  if (!inserted) return it->second;
  std::vector<NameId> path;
  ContextTree::global().path(ctx, path);
  std::vector<NameId>& out = it->second;
  bool captured = false;
  for (NameId n : path) {
    std::string_view name = NameTable::global().name(n);
    if (name == kCaptureFrame) captured = true;
    if (!captured) continue;
    if (name.starts_with(kMetadataFrame)) break;
    out.push_back(n);
  }
  return out;
}

void ChromeTraceWriter::track_graph_scopes(const TraceEvent& e) {
  const std::vector<NameId>& path = graph_path(e.context);
  if (path.empty()) return;  // not replayed from a graph
  GraphLane& lane = graph_lanes_[{e.device, e.stream}];
  size_t common = 0;
  while (common < lane.open.size() && common < path.size() &&
         lane.open[common].first == path[common]) {
    ++common;
  }
  close_graph_scopes(e.device, e.stream, lane, common);
  for (size_t i = common; i < path.size(); ++i)
    lane.open.emplace_back(path[i], e.start_ns);
  if (e.end_ns > lane.last_end_ns) lane.last_end_ns = e.end_ns;
}

void ChromeTraceWriter::close_graph_scopes(uint32_t device, uint32_t stream, GraphLane& lane,
                                           size_t keep) {
  while (lane.open.size() > keep) {
    const auto& [name, start] = lane.open.back();
    if (!first_event_) buf_.push_back(',');
    first_event_ = false;
    buf_ += "\n{\"ph\":\"X\",\"cat\":\"scope\",\"name\":";
    buf_ += quoted_name(name);
    append_gpu_place(device, kGraphLaneBase + stream, start);
    buf_ += ",\"dur\":";
    append_duration(lane.last_end_ns > start ? lane.last_end_ns - start : 0);
    buf_ += ",\"args\":{\"depth\":";
    buf_ += std::to_string(lane.open.size() - 1);
    buf_ += "}}";
    lane.open.pop_back();
  }
}

void ChromeTraceWriter::finish_graph_lanes() {
  for (auto& [where, lane] : graph_lanes_) {
    close_graph_scopes(where.first, where.second, lane, 0);
    std::string pid = std::to_string(where.first);
    std::string tid = std::to_string(kGraphLaneBase + where.second);
    std::string name;
    JsonWriter::append_string(name, "Graph: stream " + std::to_string(where.second));
    for (const auto& [what, arg] :
         {std::pair<const char*, std::string>{"thread_name", "\"name\":" + name},
          {"thread_sort_index", "\"sort_index\":" + std::to_string(where.second)}}) {
      if (!first_event_) buf_.push_back(',');
      first_event_ = false;
      buf_ += "\n{\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + tid + ",\"name\":\"" + what +
              "\",\"args\":{" + arg + "}}";
    }
  }
  graph_lanes_.clear();
}

}  // namespace proton
