// The Hatchet profile format's shared vocabulary: what its reader reports and its writer takes
// (a device of the device map, the rank block, the rule of a metric written without its suffix)
// and the depth bound every reader of it keeps.
#pragma once

#include <cstdint>
#include <string>

namespace proton::format {

// A tree deeper than this is refused: real call paths are a few hundred frames at most, and the
// bound keeps the recursive reader's stack use small whatever the input.
constexpr int kMaxTreeDepth = 1000;

// One device of the device map. The numbers are written as integers (the viewer holds them as
// doubles; the session's are counts and kHz, exact as doubles).
struct HatchetDevice {
  std::string type;  // "CUDA" or "HIP"
  std::string id;    // matches a kernel's device_id
  std::string arch;  // "90", "gfx942", ...
  double num_sms = 0;
  double clock_rate_khz = 0;
  double memory_clock_rate_khz = 0;
  double bus_width_bits = 0;
  // What one SM holds at once, for occupancy; 0 where the file does not say (files written
  // before Proton recorded them, triton.profiler's). Written only when max_threads_per_sm is
  // known; max_warps_per_sm is max_threads_per_sm / warp_size, written for readers' comfort.
  double warp_size = 0;
  double max_threads_per_sm = 0;
  double max_warps_per_sm = 0;
  double max_blocks_per_sm = 0;
  double registers_per_sm = 0;
  double shared_memory_per_sm = 0;              // bytes
  double reserved_shared_memory_per_block = 0;  // bytes
};

// The rank block a multi-process run writes on the root's frame; rank < 0 when the file has none
// (single process, triton.profiler).
struct HatchetRun {
  int64_t rank = -1;
  int64_t world_size = -1;
  int64_t local_rank = -1;
  std::string host;
  std::string device;
  std::string launcher;
  std::string version;  // "proton_version"; empty for files that do not say
};

// A rule of the root's "metric_rules": how a metric combines whose name was written without its
// "(exc)" / "(pty)" suffix.
enum class HatchetRule : uint8_t {
  kExclusive,  // "exc"
  kProperty,   // "pty"
};

}  // namespace proton::format
