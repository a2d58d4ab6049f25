// A kernel's launch facts as the rules read them (the grid, block and per-thread resources the
// profile recorded on its node), and the theoretical occupancy they give on a device: how many
// blocks of the kernel one SM holds at once, and which resource stops it holding more. Shared by
// the rules occupancy, spills and tail_effect.
//
// The occupancy model is NVIDIA's for compute capability 7.0 and later: registers are allocated
// per warp in units of 256, split over 4 SM sub-partitions; shared memory per block is the
// kernel's static and dynamic bytes plus what the driver reserves per block, in units of 128
// bytes (256 before 8.0), against the SM's largest shared-memory carveout. It is the upper bound
// the hardware allows (the driver may choose a smaller carveout), not what a run achieved.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "analysis/profile_view.h"

namespace proton::analysis {

// The ids of the launch-fact metrics in one view (format/launch_facts.h), found once per rule.
struct LaunchMetrics {
  explicit LaunchMetrics(const ProfileView& view);
  bool any() const { return block_x >= 0; }

  std::array<int32_t, 3> grid{};
  int32_t block_x = -1, block_y = -1, block_z = -1;
  std::array<int32_t, 3> cluster{};
  int32_t registers = -1, static_shared = -1, dynamic_shared = -1, local = -1, varies = -1;
};

struct LaunchShape {
  double grid_blocks = 0;  // blocks in the grid
  double threads_per_block = 0;
  double registers_per_thread = 0;
  double shared_bytes_per_block = 0;  // static + dynamic
  double local_bytes_per_thread = 0;
  double cluster_blocks = 0;  // blocks per cluster; 0 where none was recorded
  bool varies = false;        // the node's launches did not all share this configuration
};

/// The launch facts of a kernel node; none when the node has no (or a damaged) configuration.
std::optional<LaunchShape> launch_shape(const ProfileView& view, const LaunchMetrics& ids,
                                        int32_t node);

// What caps the blocks per SM, in the order a tie names them (the first binding one is "the"
// limiter; every binding one is listed).
enum class Limiter : uint8_t { kSharedMemory, kRegisters, kBlocksPerSm, kBlockSize };
inline constexpr std::array<Limiter, 4> kLimiters{Limiter::kSharedMemory, Limiter::kRegisters,
                                                  Limiter::kBlocksPerSm, Limiter::kBlockSize};
/// "shared_memory", "registers", "blocks_per_sm", "block_size": evidence words.
const char* limiter_id(Limiter l);

struct Occupancy {
  double warps_per_block = 0;
  double max_warps = 0;  // per SM
  double blocks_per_sm = 0;
  double active_warps = 0;  // blocks_per_sm x warps_per_block
  double share = 0;         // active_warps / max_warps
  // Blocks per SM each resource alone allows, by Limiter (kUnlimited where it sets no bound).
  std::array<double, 4> blocks_by{};
  Limiter limiter = Limiter::kBlockSize;

  static constexpr double kUnlimited = 1e9;
  double by(Limiter l) const { return blocks_by[static_cast<size_t>(l)]; }
  bool binds(Limiter l) const { return by(l) <= blocks_per_sm; }
};

/// The theoretical occupancy of `shape` on `device`; none when the device's limits are unknown,
/// it is not a CUDA device of compute capability 7.0 or later, or the shape cannot run.
std::optional<Occupancy> theoretical_occupancy(const ViewDevice& device, const LaunchShape& shape);

/// The most registers per thread that still fit `blocks` blocks per SM (0 when none do).
double registers_for_blocks(const ViewDevice& device, const LaunchShape& shape, double blocks);
/// The most shared memory per block (static + dynamic, bytes) that still fits `blocks` blocks
/// per SM (0 when none does).
double shared_bytes_for_blocks(const ViewDevice& device, double blocks);

}  // namespace proton::analysis
