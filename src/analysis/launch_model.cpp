#include "analysis/launch_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "format/launch_facts.h"

namespace proton::analysis {

namespace {

namespace names = format::launch_facts;

// Registers go to warps in units of this many (every architecture from 3.0 to 12.x).
constexpr double kRegisterUnit = 256;
// An SM's register file is split over this many sub-partitions, each holding whole warps.
constexpr double kSubPartitions = 4;
// What a thread may use at most.
constexpr double kMaxRegistersPerThread = 255;

double round_up(double v, double unit) {
  return std::ceil(v / unit) * unit;
}

// The compute capability's major number from the device map's arch ("90" -> 9, "100" -> 10);
// 0 when it is not a number.
int major_of(const std::string& arch) {
  int v = 0;
  auto [end, ec] = std::from_chars(arch.data(), arch.data() + arch.size(), v);
  if (ec != std::errc() || end != arch.data() + arch.size() || v <= 0) return 0;
  return v / 10;
}

// Shared memory goes to blocks in units of this many bytes.
double shared_unit(const ViewDevice& d) {
  return major_of(d.arch) >= 8 ? 128 : 256;
}

double warps_per_block(const ViewDevice& d, const LaunchShape& s) {
  return std::ceil(s.threads_per_block / d.warp_size);
}

double blocks_by_registers(const ViewDevice& d, double registers, double warps) {
  if (!(registers > 0)) return Occupancy::kUnlimited;
  double per_warp = round_up(registers * d.warp_size, kRegisterUnit);
  double warps_per_partition =
      std::floor(std::floor(d.registers_per_sm / kSubPartitions) / per_warp);
  return std::floor(warps_per_partition * kSubPartitions / warps);
}

double blocks_by_shared(const ViewDevice& d, double shared_bytes) {
  double per_block = round_up(shared_bytes + d.reserved_shared_memory_per_block, shared_unit(d));
  if (!(per_block > 0)) return Occupancy::kUnlimited;
  return std::floor(d.shared_memory_per_sm / per_block);
}

// The value of a metric as a count: absent, NaN or negative read as `missing`.
double count_of(const ProfileView& view, int32_t node, int32_t metric, double missing) {
  double v = view.value(node, metric);
  return v >= 0 && std::isfinite(v) ? v : missing;
}

}  // namespace

LaunchMetrics::LaunchMetrics(const ProfileView& view) {
  for (size_t i = 0; i < 3; ++i) {
    grid[i] = view.find_metric(names::kGrid[i]);
    cluster[i] = view.find_metric(names::kCluster[i]);
  }
  block_x = view.find_metric(names::kBlock[0]);
  block_y = view.find_metric(names::kBlock[1]);
  block_z = view.find_metric(names::kBlock[2]);
  registers = view.find_metric(names::kRegisters);
  static_shared = view.find_metric(names::kStaticShared);
  dynamic_shared = view.find_metric(names::kDynamicShared);
  local = view.find_metric(names::kLocal);
  varies = view.find_metric(names::kVaries);
}

std::optional<LaunchShape> launch_shape(const ProfileView& view, const LaunchMetrics& ids,
                                        int32_t node) {
  if (!ids.any()) return std::nullopt;
  LaunchShape s;
  s.threads_per_block = count_of(view, node, ids.block_x, 0) *
                        count_of(view, node, ids.block_y, 1) * count_of(view, node, ids.block_z, 1);
  if (!(s.threads_per_block > 0)) return std::nullopt;
  s.grid_blocks = 1;
  for (int32_t id : ids.grid)
    s.grid_blocks *= count_of(view, node, id, 1);
  double cluster = 1;
  bool clustered = false;
  for (int32_t id : ids.cluster) {
    double c = count_of(view, node, id, 0);
    clustered |= c > 0;
    cluster *= std::max(c, 1.0);
  }
  s.cluster_blocks = clustered ? cluster : 0;
  s.registers_per_thread = count_of(view, node, ids.registers, 0);
  s.shared_bytes_per_block =
      count_of(view, node, ids.static_shared, 0) + count_of(view, node, ids.dynamic_shared, 0);
  s.local_bytes_per_thread = count_of(view, node, ids.local, 0);
  s.varies = count_of(view, node, ids.varies, 0) > 0;
  return s;
}

const char* limiter_id(Limiter l) {
  switch (l) {
    case Limiter::kSharedMemory:
      return "shared_memory";
    case Limiter::kRegisters:
      return "registers";
    case Limiter::kBlocksPerSm:
      return "blocks_per_sm";
    case Limiter::kBlockSize:
      return "block_size";
  }
  return "?";
}

std::optional<Occupancy> theoretical_occupancy(const ViewDevice& d, const LaunchShape& s) {
  if (d.type != "CUDA" || major_of(d.arch) < 7) return std::nullopt;
  if (!(d.warp_size > 0 && d.max_warps_per_sm > 0 && d.max_blocks_per_sm > 0 &&
        d.registers_per_sm > 0 && d.shared_memory_per_sm > 0)) {
    return std::nullopt;
  }
  Occupancy o;
  o.warps_per_block = warps_per_block(d, s);
  o.max_warps = d.max_warps_per_sm;
  auto at = [&](Limiter l) -> double& { return o.blocks_by[static_cast<size_t>(l)]; };
  at(Limiter::kSharedMemory) = blocks_by_shared(d, s.shared_bytes_per_block);
  at(Limiter::kRegisters) = blocks_by_registers(d, s.registers_per_thread, o.warps_per_block);
  at(Limiter::kBlocksPerSm) = d.max_blocks_per_sm;
  at(Limiter::kBlockSize) = std::floor(o.max_warps / o.warps_per_block);
  o.blocks_per_sm = *std::min_element(o.blocks_by.begin(), o.blocks_by.end());
  if (!(o.blocks_per_sm >= 1)) return std::nullopt;  // it ran, so the file's numbers are off
  for (Limiter l : kLimiters) {
    if (o.binds(l)) {
      o.limiter = l;
      break;
    }
  }
  o.active_warps = o.blocks_per_sm * o.warps_per_block;
  o.share = o.active_warps / o.max_warps;
  return o;
}

double registers_for_blocks(const ViewDevice& d, const LaunchShape& s, double blocks) {
  double warps = warps_per_block(d, s);
  for (double r = kMaxRegistersPerThread; r >= 1; --r) {
    if (blocks_by_registers(d, r, warps) >= blocks) return r;
  }
  return 0;
}

double shared_bytes_for_blocks(const ViewDevice& d, double blocks) {
  double unit = shared_unit(d);
  double per_block = std::floor(d.shared_memory_per_sm / blocks / unit) * unit;
  return std::max(0.0, per_block - d.reserved_shared_memory_per_block);
}

}  // namespace proton::analysis
