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
  // What one SM holds at once, for occupancy (0 = unknown).
  uint32_t warp_size = 0;  // threads
  uint32_t max_threads_per_sm = 0;
  uint32_t max_blocks_per_sm = 0;
  uint32_t registers_per_sm = 0;                  // 32-bit registers
  uint32_t shared_memory_per_sm = 0;              // bytes
  uint32_t reserved_shared_memory_per_block = 0;  // bytes the driver keeps per block
};

}  // namespace proton
