// What the analyzer reads: a profile reduced to plain data. The viewer (or any other client)
// fills it from its own in-memory profile, so the rules depend on nothing above them.
//
// Nodes keep the tree's invariant: a parent's index is smaller than its children's, so one
// reverse sweep is a post-order walk. Values are the file's stored (exclusive) ones; NaN marks
// "no value" (a value the file stored as NaN reads the same: the rules never act on it).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proton::analysis {

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct ViewNode {
  std::string name;  // as the user reads it (demangled, shortened)
  int32_t parent = -1;
  std::vector<int32_t> children;
  std::string device_type;  // "CUDA", "HIP"; empty for frames that are not kernels
  std::string device_id;    // non-empty on kernel nodes
  std::vector<std::pair<int32_t, double>> values;  // (metric index, stored value)
  // String metrics other than the device's: a compiled kernel's "triton_config", ...
  std::vector<std::pair<std::string, std::string>> texts;

  bool is_kernel() const { return !device_id.empty(); }
};

// One device of the device map with the peaks the client knows for it (0 = unknown).
struct ViewDevice {
  std::string type;
  std::string id;
  std::string arch;
  double num_sms = 0;
  std::array<double, 4> peak_flops_per_s{};  // dense tensor-core peak for 8/16/32/64-bit operands
  double peak_bytes_per_s = 0;
  // What one SM holds at once (the device map's limits; 0 = unknown): occupancy and waves.
  double warp_size = 0;
  double max_warps_per_sm = 0;
  double max_blocks_per_sm = 0;
  double registers_per_sm = 0;
  double shared_memory_per_sm = 0;              // bytes
  double reserved_shared_memory_per_block = 0;  // bytes
};

class ProfileView {
 public:
  std::vector<ViewNode> nodes;  // nodes[0] is the root
  std::vector<std::string> metrics;
  std::vector<ViewDevice> devices;
  int64_t rank = -1;  // the rank a multi-process run recorded, -1 for none
  int64_t world_size = -1;

  int32_t add_node(int32_t parent, std::string name);
  int32_t add_kernel(int32_t parent, std::string name, std::string device_id,
                     std::string device_type = "CUDA");
  // The index of a metric, registering it on first use.
  int32_t metric_id(std::string_view name);
  void set(int32_t node, std::string_view metric, double value);
  void set_text(int32_t node, std::string_view key, std::string text);
  // The string metric `key` of `node`, empty when absent.
  std::string_view text(int32_t node, std::string_view key) const;

  // -1 when the profile has no metric of that exact name.
  int32_t find_metric(std::string_view name) const;
  // The stored value of `metric` on `node`, kNoValue when absent (or metric < 0).
  double value(int32_t node, int32_t metric) const;
  // Stored values of one metric, kNoValue where a node has none.
  std::vector<double> stored(int32_t metric) const;
  // The sum of `metric` over the kernel nodes of each subtree (a kernel counts its own value,
  // not its children's, which are source lines or regions); kNoValue where no kernel has it.
  std::vector<double> kernel_sum(int32_t metric) const;
  // The stored values summed over each subtree, kNoValue where none stored one.
  std::vector<double> subtree_sum(int32_t metric) const;
  const ViewDevice* device(std::string_view type, std::string_view id) const;
  // Frame names from below the root down to `node`.
  std::vector<std::string> path(int32_t node) const;
};

}  // namespace proton::analysis
