#include "viewer/peak_table.h"

#include <array>
#include <stdexcept>
#include <string>

namespace proton::viewer {

namespace {

// The figures are triton.profiler's, so `util` here equals Triton's viewer's. Their sources:
constexpr std::array<ArchPeak, 8> kPeaks{{
    // A100: 624 TOPS dense INT8, whatever the board. Fallback bandwidth: A100 SXM 2.04 TB/s.
    {"CUDA", "80", 624e12, 0, 108, 1410000, 2.039e12},
    // Ada (RTX 4090 class): 330.3 TFLOP/s FP8 with FP32 accumulate. Fallback: 1.01 TB/s.
    {"CUDA", "89", 330.3e12, 0, 128, 2520000, 1.008e12},
    // H100 PCIe as the reference: 1513 TFLOP/s FP8 on 114 SMs at 1755 MHz. Fallback: H100 SXM.
    {"CUDA", "90", 0, 1513e12 / (114 * 1755e6), 114, 1755000, 3.35e12},
    // Blackwell: 16384 dense FP8 FLOP per SM per clock (B200: 148 SMs at 1965 MHz, 8 TB/s).
    {"CUDA", "100", 0, 16384, 148, 1965000, 8.0e12},
    // CDNA2 (one MI250X GCD: 110 CUs at 1700 MHz): INT8 matrix rate, as it has no FP8.
    {"HIP", "gfx90a", 0, 1024, 110, 1700000, 3.2e12},
    // MI300X: 304 CUs at 2100 MHz. Early MI300 parts report gfx941, taken as gfx942.
    {"HIP", "gfx942", 0, 4096, 304, 2100000, 5.3e12},
    {"HIP", "gfx941", 0, 4096, 304, 2100000, 5.3e12},
    // MI355X: 256 CUs at 2400 MHz.
    {"HIP", "gfx950", 0, 8192, 256, 2400000, 8.0e12},
}};

// Triton writes "90" but other tools write "sm_90" or "sm90"; HIP archs may carry features.
std::string_view normalize_arch(std::string_view arch) {
  if (arch.substr(0, 3) == "sm_") return arch.substr(3);
  if (arch.substr(0, 2) == "sm") return arch.substr(2);
  if (auto colon = arch.find(':'); colon != std::string_view::npos) return arch.substr(0, colon);
  return arch;
}

const ArchPeak* find(std::string_view type, std::string_view arch) {
  arch = normalize_arch(arch);
  for (const ArchPeak& entry : kPeaks) {
    if (entry.type == type && entry.arch == arch) return &entry;
  }
  return nullptr;
}

const ArchPeak& known(std::string_view type, std::string_view arch) {
  if (type != "CUDA" && type != "HIP") {
    throw std::invalid_argument("Unsupported device type: " + std::string(type));
  }
  const ArchPeak* entry = find(type, arch);
  if (entry == nullptr)
    throw std::invalid_argument("Unsupported architecture: " + std::string(arch));
  return *entry;
}

double flops8(const ArchPeak& entry, double units, double clock_khz) {
  if (entry.fixed_flops8 > 0) return entry.fixed_flops8;
  return entry.flops8_per_unit_clock * units * clock_khz * 1e3;
}

}  // namespace

std::span<const ArchPeak> arch_peaks() {
  return kPeaks;
}

double max_flops(std::string_view type, std::string_view arch, double width, double num_sms,
                 double clock_rate_khz) {
  const ArchPeak& entry = known(type, arch);
  if (!(width > 0)) throw std::invalid_argument("width must be a positive number of bits");
  return flops8(entry, num_sms, clock_rate_khz) / (width / 8);
}

double max_bps(std::string_view type, std::string_view arch, double bus_width_bits,
               double memory_clock_rate_khz) {
  if (type == "CUDA") return 2 * bus_width_bits * memory_clock_rate_khz * 1e3 / 8;
  return known(type, arch).bytes_per_s;
}

std::optional<Peak> peak_for(const DeviceInfo& device, int width_bits) {
  if (width_bits != 8 && width_bits != 16 && width_bits != 32 && width_bits != 64) {
    return std::nullopt;
  }
  const ArchPeak* entry = nullptr;
  if (device.type.empty()) {
    for (std::string_view type : {"CUDA", "HIP"}) {
      if (entry == nullptr) entry = find(type, device.arch);
    }
  } else {
    entry = find(device.type, device.arch);
  }
  if (entry == nullptr) return std::nullopt;
  bool board = device.num_sms > 0 && device.clock_rate_khz > 0;
  Peak peak;
  peak.flops_per_s = flops8(*entry, board ? device.num_sms : entry->ref_units,
                            board ? device.clock_rate_khz : entry->ref_clock_khz) /
                     (width_bits / 8.0);
  if (entry->type == "CUDA" && device.memory_clock_rate_khz > 0 && device.bus_width_bits > 0) {
    peak.bytes_per_s =
        max_bps("CUDA", entry->arch, device.bus_width_bits, device.memory_clock_rate_khz);
  } else {
    peak.bytes_per_s = entry->bytes_per_s;
  }
  return peak;
}

}  // namespace proton::viewer
