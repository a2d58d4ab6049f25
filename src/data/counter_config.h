// What mode="counters[:...]" asks for: which hardware metrics, how ranges are cut, replay.
//
// Vendor-neutral: the names are CUPTI's (the only backend with counters today), but parsing and
// the default set's fallbacks are plain strings, tested on the CPU. The backend checks the
// names against the GPU's own metric list when it starts.
//
// Grammar (options separated by ':', metric names never contain ':'):
//   counters                              the default set, user ranges, one pass
//   counters:metrics=a,b,c                these metrics instead of the default set
//   counters:range=auto                   CUPTI's auto ranges (one context sync per launch)
//   counters:replay                       allow metric sets that need several passes (kernel
//                                         replay: every kernel runs once per pass)
//   counters:interval_us=N                PM sampling period for counter tracks (data="trace")
//   counters:sampling=range|pm|both       per-kernel range profiler, device-wide PM sampling,
//                                         or both (default: range for "tree", pm for a
//                                         trace-only session)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace proton {

enum class CounterRange : uint8_t { kUser, kAuto };

struct CounterConfig {
  bool enabled = false;
  /// Each entry: alternatives, the first the GPU knows is used (the default set spells the
  /// same quantity for several architectures); a user-named metric has one alternative.
  std::vector<std::vector<std::string>> metrics;
  bool user_metrics = false;  // metrics= was given
  CounterRange range = CounterRange::kUser;
  bool replay = false;
  bool range_profiler = true;  // per-kernel values on the tree
  bool pm_sampling = false;    // device-wide counter tracks on the trace
  uint32_t interval_us = 100;  // PM sampling period

  /// The mode string this config round-trips to (for messages and equality of sessions).
  std::string canonical() const;
};

/// True when `mode` is a counters mode ("counters" or "counters:...", any case of the head).
bool is_counters_mode(std::string_view mode);

/// Parses a counters mode. `trace_only`: the session records a trace and no tree (then PM
/// sampling is the default way). Throws std::invalid_argument naming the bad option and the
/// accepted ones. A non-counters mode gives a disabled config.
CounterConfig parse_counter_config(std::string_view mode, bool trace_only = false);

/// The default per-kernel set: DRAM bytes read and written, achieved occupancy, SM throughput,
/// tensor-pipe utilisation (wgmma and mma.sync pipes on Hopper), L2 hit rate.
std::vector<std::vector<std::string>> default_counter_metrics();

/// The default PM-sampling set (device-wide rates over each sample).
std::vector<std::vector<std::string>> default_sampling_metrics();

}  // namespace proton
