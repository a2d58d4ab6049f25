#include "attribution/graph_registry.h"

#include <algorithm>

namespace proton {

GraphRegistry& GraphRegistry::global() {
  static auto* registry = new GraphRegistry();  // leaked: CUPTI may call back during exit
  return *registry;
}

void GraphRegistry::node_created(uint64_t node, uint32_t graph, GraphNodeKind kind,
                                 const CaptureSite* site) {
  std::lock_guard lock(mu_);
  // Counted here only: instantiation and cloning report each copy as CREATED and CLONED.
  Graph& g = graphs_[graph];
  ++g.nodes;
  if (kind == GraphNodeKind::kUncertain) ++g.uncertain;
  if (kind != GraphNodeKind::kKernel) return;
  ++g.kernels;
  auto [it, inserted] = nodes_.try_emplace(node);
  if (!inserted) return;  // its CLONED came first and already set what it inherits
  g.kernel_nodes.push_back(node);
  it->second.graph = graph;
  if (site != nullptr) {
    it->second.site = *site;
    it->second.has_site = true;
  }
}

void GraphRegistry::node_cloned(uint64_t node, uint32_t graph, uint64_t original,
                                GraphNodeKind kind) {
  if (kind != GraphNodeKind::kKernel) return;
  std::lock_guard lock(mu_);
  Node copy;
  copy.graph = graph;
  if (auto from = nodes_.find(original); from != nodes_.end() && from->second.has_site) {
    copy.site = from->second.site;
    copy.has_site = true;
  }
  // The CREATED of this copy (if it came first) saw the instantiating thread's context, which
  // is not where the kernel was captured: the original's site replaces it.
  auto [it, inserted] = nodes_.try_emplace(node, copy);
  if (inserted) {
    graphs_[graph].kernel_nodes.push_back(node);
  } else {
    it->second.site = copy.site;
    it->second.has_site = copy.has_site;
  }
}

void GraphRegistry::doom(uint64_t node) {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.doomed) return;
  it->second.doomed = true;
  doomed_.push_back(node);
  if (doomed_.size() > kMaxDoomed) {
    auto half = doomed_.begin() + static_cast<std::ptrdiff_t>(doomed_.size() / 2);
    std::for_each(doomed_.begin(), half, [&](uint64_t n) { nodes_.erase(n); });
    doomed_.erase(doomed_.begin(), half);
  }
}

void GraphRegistry::node_destroyed(uint64_t node, uint32_t graph, GraphNodeKind kind) {
  std::lock_guard lock(mu_);
  if (auto g = graphs_.find(graph); g != graphs_.end()) {
    Graph& counts = g->second;
    if (counts.nodes > 0) --counts.nodes;
    if (kind == GraphNodeKind::kKernel && counts.kernels > 0) --counts.kernels;
    if (kind == GraphNodeKind::kUncertain && counts.uncertain > 0) --counts.uncertain;
  }
  if (kind == GraphNodeKind::kKernel) doom(node);
}

void GraphRegistry::graph_destroyed(uint32_t graph) {
  std::lock_guard lock(mu_);
  auto g = graphs_.find(graph);
  if (g == graphs_.end()) return;
  for (uint64_t node : g->second.kernel_nodes)
    doom(node);
  graphs_.erase(g);
}

uint32_t GraphRegistry::fanout_of(const Graph& g) {
  return g.uncertain != 0 ? kUnknownFanout : g.kernels;
}

uint32_t GraphRegistry::exec_created(uint32_t exec_graph, uint32_t source_graph) {
  std::lock_guard lock(mu_);
  if (auto s = graphs_.find(source_graph); source_graph != 0 && s != graphs_.end()) {
    return fanout_of(s->second);
  }
  if (auto e = graphs_.find(exec_graph);
      exec_graph != 0 && e != graphs_.end() && e->second.nodes != 0) {
    return fanout_of(e->second);
  }
  return kUnknownFanout;
}

void GraphRegistry::captured_launch(uint64_t correlation) {
  std::lock_guard lock(mu_);
  // A launch captured as several nodes (none today) must be dropped once.
  if (captured_.empty() || captured_.back() != correlation) captured_.push_back(correlation);
}

void GraphRegistry::take_captured(std::vector<uint64_t>& out) {
  std::lock_guard lock(mu_);
  out.insert(out.end(), captured_.begin(), captured_.end());
  captured_.clear();
}

bool GraphRegistry::site(uint64_t node, CaptureSite& out) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.has_site) return false;
  out = it->second.site;
  return true;
}

void GraphRegistry::collect() {
  std::lock_guard lock(mu_);
  for (uint64_t node : doomed_)
    nodes_.erase(node);
  doomed_.clear();
}

size_t GraphRegistry::nodes() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

size_t GraphRegistry::graphs() const {
  std::lock_guard lock(mu_);
  return graphs_.size();
}

}  // namespace proton
