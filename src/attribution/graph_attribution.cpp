#include "attribution/graph_attribution.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "common/name_table.h"
#include "context/context_tree.h"

namespace proton {

namespace {

// Once per process: a program that replays graphs captured before profiling started does so
// every step, and one line says all there is to say.
std::atomic<bool> g_noticed{false};

void notice_unknown_graph(uint64_t graph) {
  // Called for every record of such a graph: a plain load first, the locked exchange once.
  if (g_noticed.load(std::memory_order_relaxed)) return;
  if (g_noticed.exchange(true, std::memory_order_relaxed)) return;
  std::fprintf(stderr, "%s\n", unknown_graph_notice(graph).c_str());
}

}  // namespace

std::string unknown_graph_notice(uint64_t graph) {
  std::string id = std::to_string(graph);
  return "proton: Cannot find graph for graphExecId: " + id + ": CUDA graph " + id +
         " was captured before profiling started; its kernels are attributed to where the graph "
         "is launched, without their capture-site paths (start profiling before capturing to "
         "see them)";
}

GraphAttribution::GraphAttribution(GraphRegistry& registry) : registry_(registry) {}

const GraphAttribution::CachedNode& GraphAttribution::node(uint64_t id) {
  auto [it, inserted] = nodes_.try_emplace(id);
  if (inserted) it->second.known = registry_.site(id, it->second.site);
  return it->second;
}

ContextId replayed_path(ContextId replay, ContextId capture, std::vector<NameId>& scratch) {
  ContextTree& tree = ContextTree::global();
  ContextId ctx = tree.child(replay, NameTable::global().intern(GraphAttribution::kCaptureFrame));
  scratch.clear();
  tree.path(capture, scratch);
  for (NameId name : scratch)
    ctx = tree.child(ctx, name);
  return ctx;
}

ContextId GraphAttribution::path(ContextId replay, ContextId capture) {
  uint64_t key = (uint64_t{replay} << 32) | capture;
  auto [it, inserted] = paths_.try_emplace(key, kRootContext);
  if (inserted) it->second = replayed_path(replay, capture, scratch_);
  return it->second;
}

LaunchTag GraphAttribution::replay_tag(const LaunchTag& launch, const KernelRecord& r) {
  LaunchTag tag = launch;
  if (r.graph_node_id == 0) return tag;  // a graph-level record: the launch site is its place
  const CachedNode& n = node(r.graph_node_id);
  if (!n.known) {
    ++unknown_site_records_;
    notice_unknown_graph(r.graph_id);
    return tag;
  }
  tag.context = path(launch.context, n.site.context);
  if (launch.python_context != kRootContext) {
    // A Python session that started after the capture has no Python capture path: the scopes
    // active at capture are the best description left.
    ContextId capture =
        n.site.python_context != kRootContext ? n.site.python_context : n.site.context;
    tag.python_context = path(launch.python_context, capture);
  }
  if (tag.op == 0) tag.op = n.site.op;
  return tag;
}

uint64_t GraphAttribution::launch_seen(uint32_t graph, uint64_t correlation) {
  // Records come in runs of one graph's kernels: the last graph's entry saves the hash lookup
  // (unordered_map entries keep their address across rehashing).
  if (recent_last_ == nullptr || graph != recent_last_graph_) {
    recent_last_ = &recent_[graph];
    recent_last_graph_ = graph;
  }
  auto& [older, newer] = *recent_last_;
  if (correlation <= newer || correlation == older) return 0;  // a launch already known
  uint64_t stale = older;
  older = newer;
  newer = correlation;
  return stale;
}

uint64_t GraphAttribution::track_unknown(uint64_t correlation) {
  unknown_.push_back(correlation);
  if (unknown_.size() <= kMaxUnknownTags) return 0;
  uint64_t evicted = unknown_.front();
  unknown_.pop_front();
  return evicted;
}

void GraphAttribution::settle() {
  registry_.collect();
  nodes_.clear();
}

void GraphAttribution::forget_launches() {
  recent_.clear();
  recent_last_ = nullptr;
  unknown_.clear();
}

}  // namespace proton
