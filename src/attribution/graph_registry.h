// What the profiler knows about CUDA-graph nodes: where each kernel node was captured, and how
// many kernels one launch of an executable graph produces. Vendor-neutral: the CUPTI backend
// feeds it from its resource callbacks (graph_callbacks.cpp), tests feed it by hand.
//
// Why it exists. A kernel that runs in a graph replay was launched (as an API call with a
// context) only once, at capture; the replay is one launch that fans out to N kernels. Kernel
// records carry the node id, so knowing node id -> capture context lets the record thread put
// each replayed kernel under "replay site / <captured_at> / capture site / kernel", and knowing
// N per executable graph lets the record processor forget a replay's tag after its N-th kernel.
//
// Node ids are unique for the life of the process (CUPTI's guarantee), so an entry never
// changes meaning; instantiating or cloning a graph copies its nodes (CREATED, then CLONED
// naming the original), and the copy inherits the original's capture site. Only kernel nodes
// are kept: other nodes produce no kernel records. Destroyed nodes are forgotten at the next
// collect() (after a flush), because records of their last replays may still be in flight.
//
// Threads: resource callbacks (application threads) and the record thread; every member takes
// mu_ (none of them is on the per-launch hot path).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/ids.h"

namespace proton {

/// Where a kernel node was created: the creating thread's context at stream capture (or at an
/// explicit add-node call), and the launch metadata of the captured launch.
struct CaptureSite {
  ContextId context = kRootContext;         // shadow path (scopes and states)
  ContextId python_context = kRootContext;  // Python path, when a python-context session ran
  uint32_t op = 0;                          // LaunchOps entry of the captured launch (0: none)
};

/// What one node contributes to a launch of its graph.
enum class GraphNodeKind : uint8_t {
  kKernel,     // one kernel record per launch
  kNoKernel,   // memcpy, memset, host, event, empty, alloc/free ...: no kernel record
  kUncertain,  // child graph, conditional/while, or a type newer than this code: any number
};

class GraphRegistry {
 public:
  /// exec_created(): kernels per launch cannot be known (see GraphNodeKind::kUncertain).
  static constexpr uint32_t kUnknownFanout = std::numeric_limits<uint32_t>::max();
  /// More destroyed nodes than this waiting for collect(): the oldest half is freed at once
  /// (a program that rebuilds graphs without ever flushing must not grow without bound).
  static constexpr size_t kMaxDoomed = 1u << 16;

  static GraphRegistry& global();

  /// A node was added to `graph`. `site` is the creating thread's context, or nullptr when the
  /// node is a copy made by instantiation or cloning (a node_cloned() for it follows).
  void node_created(uint64_t node, uint32_t graph, GraphNodeKind kind, const CaptureSite* site);
  /// `node` of `graph` is a copy of `original`: it inherits the original's capture site (none
  /// when the original was created before profiling started).
  void node_cloned(uint64_t node, uint32_t graph, uint64_t original, GraphNodeKind kind);
  void node_destroyed(uint64_t node, uint32_t graph, GraphNodeKind kind);
  void graph_destroyed(uint32_t graph);

  /// Executable graph `exec_graph` was instantiated from `source_graph` (0 when unknown).
  /// Returns the kernel records one launch produces, or kUnknownFanout. The source graph's
  /// counts win: its id comes straight from the instantiate call. The nodes copied into the
  /// executable graph are the fallback, for a source graph built before profiling started.
  uint32_t exec_created(uint32_t exec_graph, uint32_t source_graph);

  /// A launch made while its stream was being captured: it recorded a node and will never run,
  /// so its launch tag must not wait for kernels (the record processor drops it).
  void captured_launch(uint64_t correlation);
  /// Moves the captured launches reported so far into `out` (record thread).
  void take_captured(std::vector<uint64_t>& out);

  /// The capture site of kernel node `node`. False when the node is unknown (created before
  /// profiling started) or a copy of such a node.
  bool site(uint64_t node, CaptureSite& out) const;

  /// Frees destroyed nodes. Call when no record of them can still arrive (after a flush).
  void collect();

  size_t nodes() const;
  size_t graphs() const;

 private:
  struct Node {
    CaptureSite site;
    uint32_t graph = 0;
    bool has_site = false;
    bool doomed = false;  // destroyed; freed by collect()
  };
  struct Graph {
    uint32_t nodes = 0;      // every node reported created in it
    uint32_t kernels = 0;    // kernel nodes among them
    uint32_t uncertain = 0;  // nodes that launch an unknown number of kernels
    std::vector<uint64_t> kernel_nodes;
  };
  void doom(uint64_t node);                   // requires mu_
  static uint32_t fanout_of(const Graph& g);  // kernels, or kUnknownFanout

  mutable std::mutex mu_;                       // guards everything below
  std::unordered_map<uint64_t, Node> nodes_;    // kernel nodes only
  std::unordered_map<uint32_t, Graph> graphs_;  // graph id -> what it holds
  std::vector<uint64_t> doomed_;                // destroyed kernel nodes, oldest first
  std::vector<uint64_t> captured_;              // see captured_launch()
};

}  // namespace proton
