// Peak dense tensor-core FLOP/s and memory bandwidth per GPU architecture, for `util`.
#pragma once

#include <optional>
#include <string_view>

#include "viewer/profile.h"

namespace proton::viewer {

struct Peak {
  double flops_per_s = 0;  // for the requested operand width
  double bytes_per_s = 0;
};

// The device's peak for operands of `width_bits` (8, 16, 32 or 64), or nullopt when the
// architecture is not in the table. Peaks are scaled to the device's SM count and clock when the
// device map gives them (boards of one architecture differ), and the bandwidth comes from the
// device map's memory clock and bus width when present.
std::optional<Peak> peak_for(const DeviceInfo& device, int width_bits);

}  // namespace proton::viewer
