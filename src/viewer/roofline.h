// Measured counterparts of the declared roofline: columns from hardware counters
// (mode="counters", docs/counters.md).
//
//   <metric>              a time-weighted counter ("<metric> (ns-weighted)" in the file) shown
//                         as its average over the subtree, weighted by kernel time
//   dram_byte/s           DRAM bytes read + written per second of counted kernel time
//   dram_gbyte/s, dram_tbyte/s
//   dram_peak%            that rate as % of the device's peak bandwidth (device map)
//   l2_hit%               L2 hit rate estimated from L2 sectors and DRAM reads (the exact
//                         metric needs two passes on Hopper)
//   sass_flop/s           FLOP/s from SASS instruction counters, when the profile has them
//   sass_gflop/s, sass_tflop/s
//   bytes_mismatch        declared bytes / measured DRAM bytes where they differ by more
//                         than 2x (a wrong launch_metadata); absent where they agree
//   flops_mismatch        the same for declared flops / SASS flops
//   roofline              expands to time, the declared rates, the measured ones, the peak
//                         share, util and the mismatch flags that the profile can give
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "viewer/derived_metrics.h"

namespace proton::viewer {

/// The column for `request` (lower-cased) if it is one of the above; nullopt otherwise.
/// Throws UsageError when it is ours but the profile lacks what it needs.
std::optional<Column> counter_column(const Profile& profile, std::string_view request,
                                     std::vector<std::string>& warnings);

/// The requests "roofline" stands for in this profile.
std::vector<std::string> expand_roofline(const Profile& profile);

/// Declared over measured, or NaN when within `factor` either way (or either is missing).
double mismatch(double declared, double measured, double factor = 2.0);

}  // namespace proton::viewer
