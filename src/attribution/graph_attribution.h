// The record thread's side of CUDA graphs: where a replayed kernel goes, and when the tag of a
// graph launch can be forgotten.
//
// Paths. A kernel record with a graph node id gets the tag of the replay that ran it, with its
// context extended to "replay context / <captured_at> / capture-site path" (the frame name
// Triton's Proton uses, so profiles of both read alike) and the launch metadata of the captured
// launch. Paths are interned once per (replay context, capture context) pair and cached; node
// lookups are cached too, so a steady replay loop takes no lock and interns nothing.
//
// Forgetting tags. One graph launch fans out to the kernels of its nodes. When the number is
// known (GraphRegistry::exec_created) the tag counts down as usual. When it is not (a graph
// instantiated before profiling started, conditional nodes) two rules bound the memory:
//   - Launches of one executable graph run one after the other (CUDA orders each launch behind
//     the previous launch of the same graph), so once records of a launch two launches newer
//     arrive, the older launch has no kernel left to deliver: launch_seen() names it.
//   - Unknown-fan-out tags that no graph record ever claims (a graph with no kernels) are kept
//     in a FIFO of kMaxUnknownTags; track_unknown() names the one that falls out.
//
// Not thread-safe: the RecordProcessor calls it under its lock.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "attribution/graph_registry.h"
#include "attribution/kernel_record.h"
#include "attribution/launch_stage.h"

namespace proton {

class GraphAttribution {
 public:
  /// Unknown-fan-out launches waiting for their first record, at most. Launches in flight are
  /// bounded by what 20 ms of launches produce (the periodic flush), well below this.
  static constexpr size_t kMaxUnknownTags = 1u << 16;
  /// The frame between the replay site and the capture site.
  static constexpr const char* kCaptureFrame = "<captured_at>";

  explicit GraphAttribution(GraphRegistry& registry = GraphRegistry::global());

  /// The tag a graph kernel record is delivered with: `launch` (the replay's tag) with the
  /// capture-site path appended and the captured launch's metadata. `launch` unchanged when the
  /// node's capture site is unknown (the first such record prints a one-line notice).
  LaunchTag replay_tag(const LaunchTag& launch, const KernelRecord& r);

  /// A record of launch `correlation` of graph `graph` arrived. Returns an older launch of the
  /// same graph that can no longer receive records (0: none).
  uint64_t launch_seen(uint32_t graph, uint64_t correlation);

  /// An unknown-fan-out launch was staged. Returns the launch that falls out of the FIFO (0:
  /// none); the caller forgets it unless a graph record claimed it.
  uint64_t track_unknown(uint64_t correlation);

  /// Launches made during stream capture (see GraphRegistry::captured_launch).
  void take_captured(std::vector<uint64_t>& out) { registry_.take_captured(out); }

  /// After a flush: frees destroyed nodes and the caches built from them.
  void settle();
  /// Forgets every launch (the processor dropped all its tags).
  void forget_launches();

  /// Records whose node had no capture site (graphs from before profiling started).
  uint64_t unknown_site_records() const { return unknown_site_records_; }
  size_t cached_paths() const { return paths_.size(); }

 private:
  struct CachedNode {
    CaptureSite site;
    bool known = false;
  };
  const CachedNode& node(uint64_t id);
  ContextId path(ContextId replay, ContextId capture);  // replay / <captured_at> / capture

  GraphRegistry& registry_;
  std::unordered_map<uint64_t, CachedNode> nodes_;  // node id -> site (cleared by settle)
  std::unordered_map<uint64_t, ContextId> paths_;   // (replay << 32 | capture) -> path
  std::vector<NameId> scratch_;
  // Per graph: the newest two launches that delivered records, older first (0: none).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> recent_;
  std::pair<uint64_t, uint64_t>* recent_last_ = nullptr;  // recent_[recent_last_graph_]
  uint32_t recent_last_graph_ = 0;
  std::deque<uint64_t> unknown_;  // unknown-fan-out launches, oldest first
  uint64_t unknown_site_records_ = 0;
};

/// Where a kernel replayed from a graph goes: "replay / <captured_at> / capture-site path"
/// (`scratch` holds the capture path while it is built). Interns the path's nodes.
ContextId replayed_path(ContextId replay, ContextId capture, std::vector<NameId>& scratch);

/// The one line printed, once per process, when kernels of a graph captured before profiling
/// started arrive. It carries triton.profiler's phrase for that case ("Cannot find graph for
/// graphExecId: N"), which scripts grep for.
std::string unknown_graph_notice(uint64_t graph);

}  // namespace proton
