// What mode="counters[:...]" asks for: which hardware metrics, from which CUPTI source
// (parsed by the mode grammar, options/mode_grammar.cpp).
//
// Vendor-neutral: the names are CUPTI's (the only backend with counters today), but the
// default sets' fallbacks are plain strings, tested on the CPU. The backend checks the
// names against the GPU's own metric list when it starts.
//
// Two sources of per-kernel values:
//   PM sampling (default)  device-wide counters every interval_us; each sample's counts are
//                          split over the kernels that ran in it (data/counter_split.h). No
//                          work on the launch path, no synchronisation; the same samples are
//                          the counter tracks of a trace.
//   Range Profiler (opt-in, range=user|auto)  exact values per launch, at a price said at
//                          start: ~1 ms per launch on an H100 with user ranges, a context
//                          synchronisation per launch with auto ranges.
//
// Grammar (options separated by ':', metric names never contain ':'):
//   counters                              PM sampling, the default set, one pass
//   counters:metrics=a,b,c                these metrics instead of the default set
//   counters:interval_us=N                PM sampling period
//   counters:range=user|auto              per-kernel values from the Range Profiler instead
//                                         (user: a range around each launch; auto: CUPTI's
//                                         per-kernel ranges, one context sync per launch)
//   counters:replay                       allow metric sets that need several passes (Range
//                                         Profiler, kernel replay: every kernel runs once per
//                                         pass; implies range=auto)
//   counters:sampling=pm|range|both       pm (default); range = range=user; both: the Range
//                                         Profiler per kernel and PM sampling beside it (its
//                                         per-kernel values named "pm:<metric>")
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
  bool range_profiler = false;  // per-kernel values from the Range Profiler (opt-in)
  bool pm_sampling = true;      // PM sampling: per-kernel values by split, counter tracks
  uint32_t interval_us = kDefaultIntervalUs;
  // Sizes the user may override (PROTON_COUNTER_BATCH, PROTON_PM_BUFFER_MB,
  // PROTON_PM_IMAGE_SAMPLES; options/environment.h); 0: our choice.
  uint32_t range_batch = 0;       // Range Profiler ranges per decode (512)
  uint32_t pm_buffer_mb = 0;      // PM sampling's hardware buffer (sized from interval_us)
  uint32_t pm_image_samples = 0;  // PM sampling's counter-data image (sized from interval_us)

  /// PM sampling period. On an H100 our thread spends 65-120 us decoding and evaluating each
  /// sample of the default set: every 100 us it was 65% busy (64 MB hardware buffer), every
  /// 250 us 30% (+29 MB), every 1000 us 12% (+7 MB); docs/counters.md, Cost.
  static constexpr uint32_t kDefaultIntervalUs = 250;

  /// The mode string this config round-trips to (for messages and equality of sessions).
  std::string canonical() const;
};

/// The Range Profiler's default set: DRAM bytes read and written, achieved occupancy, SM
/// throughput, tensor-pipe utilisation (wgmma and mma.sync pipes on Hopper), L2 sectors.
std::vector<std::vector<std::string>> default_counter_metrics();

/// PM sampling's default set (per-kernel values and counter tracks): the same quantities as
/// PM sampling can count them in one pass, plus the GPC clock.
std::vector<std::vector<std::string>> default_sampling_metrics();

}  // namespace proton
