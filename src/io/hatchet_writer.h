// Hatchet JSON output: the format triton.profiler writes and its viewer and llnl-hatchet read.
//
//   [ {"frame": {"name": "ROOT", "type": "function"}, "metrics": {...}, "children": [...]},
//     {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": ..., ...}}} ]
//
// Kernel nodes carry "time (ns)", "count", "device_id" (a string) and "device_type"; metric
// values are exclusive to their node (viewers compute inclusive sums). When any kernel ran, the
// root carries zero "time (ns)" and "count" so Hatchet creates those columns on every row.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "data/call_tree.h"
#include "data/device_info.h"

namespace proton {

/// The metrics every kernel node carries ("time (ns)", "count", "device_id", "device_type").
/// A node metric of the same name from elsewhere (launch metadata, add_metrics) would be a
/// second JSON key: the launch hook refuses such names, and the writers skip them.
bool is_kernel_column(std::string_view name);

/// Counters about collection itself, written on the root when non-zero.
struct CollectionStats {
  uint64_t dropped_records = 0;       // activity records the backend lost
  uint64_t unattributed_kernels = 0;  // kernels whose launch context was unknown
  // A window of an always-on process: its number and kept steps, on the root's frame (-1: none).
  int64_t window = -1;
  int64_t window_first_step = -1;
  int64_t window_last_step = -1;
};

std::string hatchet_json(const CallTree& tree, std::span<const DeviceInfo> devices,
                         const CollectionStats& stats);
/// The same tree as MessagePack (triton.profiler's "hatchet_msgpack"): decodes to exactly
/// what hatchet_json parses to, except that a NaN metric is a float64 NaN here and null there.
std::string hatchet_msgpack(const CallTree& tree, std::span<const DeviceInfo> devices,
                            const CollectionStats& stats);

}  // namespace proton
