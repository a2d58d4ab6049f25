// What a kernel launch asked of the GPU: its grid, block and cluster shape and the resources each
// block and thread holds. A backend fills it from the GPU's own record of the kernel (CUPTI's
// kernel activity record), so it costs nothing on the launch path; the call tree keeps it on the
// kernel's node and the Hatchet writer writes it as property metrics (kept, never summed).
//
// Vendor-neutral: names say what the number is, not which CUPTI field it came from.
#pragma once

#include <array>
#include <cstdint>

namespace proton {

struct LaunchFacts {
  std::array<uint32_t, 3> grid{};     // blocks per dimension
  std::array<uint16_t, 3> block{};    // threads per dimension (at most 1024 in all)
  std::array<uint16_t, 3> cluster{};  // blocks per cluster per dimension; 0 = not recorded
  uint16_t registers_per_thread = 0;
  uint32_t static_shared_bytes = 0;     // per block, declared in the kernel
  uint32_t dynamic_shared_bytes = 0;    // per block, asked for at launch
  uint32_t local_bytes_per_thread = 0;  // local memory: register spills and local arrays

  /// A backend that does not know the configuration (graph-level records) leaves it all zero.
  bool known() const { return block[0] != 0; }
  bool operator==(const LaunchFacts&) const = default;
};

}  // namespace proton
