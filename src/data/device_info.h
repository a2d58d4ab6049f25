// What the device map of a profile says about each GPU.
#pragma once

#include <cstdint>
#include <string>

#include "data/call_tree.h"

namespace proton {

struct DeviceInfo {
  DeviceType type = DeviceType::kCuda;
  uint32_t id = 0;
  std::string arch;  // CUDA: compute capability as digits ("90" for sm_90); HIP: "gfx942"
  uint32_t num_sms = 0;
  uint64_t clock_rate = 0;         // kHz
  uint64_t memory_clock_rate = 0;  // kHz
  uint32_t bus_width = 0;          // bits
};

}  // namespace proton
