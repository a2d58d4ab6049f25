// Peak dense FLOP/s and memory bandwidth per GPU architecture: the figures triton.profiler's
// `specs` module gives (its `max_flops` and `max_bps`), held once here for `util` in the viewer
// and for `proton.specs` in Python.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "viewer/profile.h"

namespace proton::viewer {

// One architecture. The 8-bit peak is either a fixed figure or a number of FLOP per SM (CU) per
// clock cycle; an operand of `width` bits gets the 8-bit peak divided by width / 8.
struct ArchPeak {
  std::string_view type;         // "CUDA" or "HIP"
  std::string_view arch;         // "90", "gfx942", ...
  double fixed_flops8;           // > 0: the 8-bit peak whatever the board's SMs and clock
  double flops8_per_unit_clock;  // otherwise: 8-bit FLOP per SM (CU) per clock cycle
  double ref_units;              // reference board's SMs (CUs), for device maps that lack them
  double ref_clock_khz;          // and its clock
  double bytes_per_s;            // HIP: the bandwidth; CUDA: used only when the map lacks it
};

// Every architecture in the table, CUDA first.
std::span<const ArchPeak> arch_peaks();

// Triton's `specs.max_flops(device_type, arch, width, num_sms, clock_rate)`: the peak FLOP/s for
// operands of `width` bits on a device with `num_sms` SMs (CUs) at `clock_rate_khz`. Unknown
// device type or architecture, or a width that is not positive: std::invalid_argument whose
// text is Triton's ("Unsupported device type: X", "Unsupported architecture: X").
double max_flops(std::string_view type, std::string_view arch, double width, double num_sms,
                 double clock_rate_khz);

// Triton's `specs.max_bps(device_type, arch, bus_width, memory_clock_rate)`: CUDA from the bus
// width (bits) and memory clock (kHz) at two transfers per clock; HIP from the table (its
// reported HBM clock under that formula gives half the data-sheet figure).
double max_bps(std::string_view type, std::string_view arch, double bus_width_bits,
               double memory_clock_rate_khz);

struct Peak {
  double flops_per_s = 0;  // for the requested operand width
  double bytes_per_s = 0;
};

// The device's peak for operands of `width_bits` (8, 16, 32 or 64), or nullopt when the
// architecture is not in the table: max_flops and max_bps for the device map's figures, with
// the reference board's SMs, clock or bandwidth where the map lacks them. The architecture may
// be written "90", "sm_90" or "sm90"; a HIP one may carry features ("gfx942:sramecc+:xnack-").
std::optional<Peak> peak_for(const DeviceInfo& device, int width_bits);

}  // namespace proton::viewer
