#include "viewer/peak_table.h"

#include <array>
#include <string>

namespace proton::viewer {

namespace {

// Dense (non-sparse) tensor-core peaks of one reference board per architecture, in TFLOP/s for
// 8/16/32/64-bit operands (32 = TF32 or FP32 matrix, 64 = FP64 tensor/matrix), from the vendors'
// data sheets. Scaling by SMs x clock carries them to other boards of the same architecture.
struct ArchPeak {
  std::string_view type;
  std::string_view arch;
  double ref_sms;
  double ref_clock_khz;
  std::array<double, 4> tflops;  // widths 8, 16, 32, 64
  double ref_tbytes_per_s;       // used only when the device map lacks memory clock/bus width
};

constexpr std::array<ArchPeak, 8> kPeaks{{
    // A100 SXM: 108 SMs at 1410 MHz; INT8 624, FP16 312, TF32 156, FP64 19.5; 2.04 TB/s.
    {"CUDA", "80", 108, 1410000, {624, 312, 156, 19.5}, 2.039},
    // RTX 4090 class (Ada): 128 SMs at 2520 MHz; FP8 330.3 (FP32 accumulate) as Triton uses.
    {"CUDA", "89", 128, 2520000, {330.3, 165.2, 82.6, 1.29}, 1.008},
    // H100 SXM: 132 SMs at 1980 MHz; FP8 1979, FP16 989.4, TF32 494.7, FP64 66.9; 3.35 TB/s.
    {"CUDA", "90", 132, 1980000, {1979, 989.4, 494.7, 66.9}, 3.35},
    // B200: 148 SMs at 1965 MHz; 16384 dense FP8 FLOP per SM per clock; FP64 40; 8 TB/s.
    {"CUDA", "100", 148, 1965000, {4765, 2382, 1191, 40}, 8.0},
    // MI250X, one GCD as HIP sees it: 110 CUs at 1700 MHz; INT8/FP16 383/191.5, FP64 47.9.
    {"HIP", "gfx90a", 110, 1700000, {383, 191.5, 47.9, 47.9}, 1.638},
    // MI300X: 304 CUs at 2100 MHz; FP8 2614.9, FP16 1307.4, TF32 653.7, FP64 163.4; 5.3 TB/s.
    {"HIP", "gfx942", 304, 2100000, {2614.9, 1307.4, 653.7, 163.4}, 5.3},
    // Early MI300 parts report gfx941; Triton treats them as gfx942 and so do we.
    {"HIP", "gfx941", 304, 2100000, {2614.9, 1307.4, 653.7, 163.4}, 5.3},
    // MI355X: 256 CUs at 2400 MHz; FP8 5033, FP16 2516, FP32 matrix 157.3, FP64 78.6; 8 TB/s.
    {"HIP", "gfx950", 256, 2400000, {5033, 2516, 157.3, 78.6}, 8.0},
}};

// Triton writes "90" but other tools write "sm_90" or "sm90"; HIP archs may carry features
// ("gfx942:sramecc+:xnack-").
std::string_view normalize_arch(std::string_view arch) {
  if (arch.substr(0, 3) == "sm_") return arch.substr(3);
  if (arch.substr(0, 2) == "sm") return arch.substr(2);
  if (auto colon = arch.find(':'); colon != std::string_view::npos) return arch.substr(0, colon);
  return arch;
}

}  // namespace

std::optional<Peak> peak_for(const DeviceInfo& device, int width_bits) {
  int slot;
  switch (width_bits) {
    case 8:
      slot = 0;
      break;
    case 16:
      slot = 1;
      break;
    case 32:
      slot = 2;
      break;
    case 64:
      slot = 3;
      break;
    default:
      return std::nullopt;
  }
  std::string_view arch = normalize_arch(device.arch);
  for (const ArchPeak& entry : kPeaks) {
    if (entry.arch != arch) continue;
    if (!device.type.empty() && entry.type != device.type) continue;
    Peak peak;
    double scale = 1;
    if (device.num_sms > 0 && device.clock_rate_khz > 0) {
      scale = device.num_sms / entry.ref_sms * device.clock_rate_khz / entry.ref_clock_khz;
    }
    peak.flops_per_s = entry.tflops[static_cast<size_t>(slot)] * 1e12 * scale;
    // CUDA reports the memory clock such that two transfers per clock over the bus give the
    // data-sheet bandwidth (H100: 2619 MHz x 2 x 640 B = 3.35 TB/s). HIP's reported HBM clock
    // under the same formula gives half of it (MI300X: 2.7 of 5.3 TB/s), so HIP uses the table.
    if (device.type != "HIP" && device.memory_clock_rate_khz > 0 && device.bus_width_bits > 0) {
      peak.bytes_per_s = 2 * device.bus_width_bits / 8 * device.memory_clock_rate_khz * 1e3;
    } else {
      peak.bytes_per_s = entry.ref_tbytes_per_s * 1e12;
    }
    return peak;
  }
  return std::nullopt;
}

}  // namespace proton::viewer
