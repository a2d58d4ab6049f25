// A session's mode: what the backend records beside the call tree. One typed variant, parsed
// from the mode string by one grammar (mode_grammar.cpp); the Python layer's proton.mode
// objects render to that grammar and parse through it (the native module's parse_mode).
//
// Grammar: a head, then ':'-separated options (key=value, or a bare flag where noted).
//   ""                                        kernel timing (the default)
//   graph                                     one node per CUDA graph launch
//   periodic_flushing[:format=hatchet|hatchet_msgpack|chrome_trace]
//   pcsampling[:interval=N][:buffer_mb=N][:sleep_ms=N][:drain_ms=N][:adapt=0|1]
//   counters[:metrics=a,b][:interval_us=N][:range=user|auto][:replay][:sampling=pm|range|both]
//   default|mma[:metric_type=..][:sampling_strategy=..][:sampling_options=0,4][:granularity=..]
//       [:buffer_strategy=..][:buffer_type=..][:buffer_size=N][:optimizations=a,b]
//                                             intra-kernel instrumentation (Triton's spelling;
//                                             values may be written as Triton prints them,
//                                             GRANULARITY.WARP)
//   <default|mma>_<metric>::[<granularity>::<strategy>::<warps;..|all>]
//                                             instrumentation, the short form
// Heads are case-insensitive. A malformed mode throws std::invalid_argument naming the part
// and what is accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backends/pc_sampling_options.h"
#include "data/counter_config.h"

namespace proton {

/// "" : kernel timing.
struct KernelTimingMode {};

/// "graph": one record per graph launch (docs/graphs.md).
struct GraphMode {};

/// "periodic_flushing[:format=...]": each completed phase is written to name.part_N.<format>
/// and freed (chrome_trace: the phase's trace; the trees stay and are written at finalize).
struct PeriodicFlushing {
  bool enabled = false;
  std::string format = "hatchet";
};

/// "default" / "mma" (and the short form): Triton's instrumentation passes. Values are the
/// canonical lower-case spellings ("warp_group", "circular", ...).
struct InstrumentationMode {
  std::string name = "default";  // default | mma
  std::string metric_type = "cycle";
  std::string sampling_strategy = "none";
  std::vector<uint32_t> sampled_warps;  // sampling_options, sorted, unique
  std::string granularity = "warp";
  std::string buffer_strategy = "circular";
  std::string buffer_type = "global";
  uint64_t buffer_size = 0;  // 0 or a power of two
  /// Names given with optimizations= (possibly none); nullopt: the default set.
  std::optional<std::vector<std::string>> optimizations;

  bool operator==(const InstrumentationMode&) const = default;
};

/// The optimizations Triton's passes get: those named, or the default set (clock32,
/// sched_stores) when none were given.
std::vector<std::string> optimizations_or_default(const InstrumentationMode& mode);

using Mode = std::variant<KernelTimingMode, GraphMode, PeriodicFlushing, PcSamplingOptions,
                          CounterConfig, InstrumentationMode>;

/// Parses a mode string (the grammar above).
Mode parse_mode(std::string_view text);

/// The variant's kind, as the Python layer names it: "kernel_timing", "graph",
/// "periodic_flushing", "pcsampling", "counters", "instrumentation".
std::string_view mode_kind(const Mode& mode);

/// The PC sampling period (log2 cycles) for `interval` cycles: the next power of two, clamped
/// to CUPTI's 5..31.
uint32_t pc_period_log2_for_interval(uint64_t interval);

}  // namespace proton
