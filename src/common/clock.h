// Nanosecond readings of the standard clocks, as integers.
#pragma once

#include <chrono>
#include <cstdint>

namespace proton {

/// CLOCK_MONOTONIC: intervals, CPU timestamps of traces.
inline uint64_t steady_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

/// Wall-clock time since the Unix epoch.
inline uint64_t wall_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace proton
