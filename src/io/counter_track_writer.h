// Chrome-trace counter events ("ph":"C") for device-wide hardware-counter samples.
//
// Each metric is its own counter track in the GPU's process (pid = device id, the process that
// holds that GPU's kernel lanes), so Perfetto draws it right above the kernel boxes on the same
// time axis. A sample's value is drawn from its start until the next sample; a gap in sampling
// ends with a 0 so the last value does not stretch over time nothing was measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/counter_track.h"

namespace proton {

/// The counter events of `track`: sample times (clock of kernel records) minus `gpu_offset_ns`
/// are steady-clock ns; ts is written in µs relative to `base_steady_ns` (the trace's ts 0).
std::vector<std::string> counter_track_events(const CounterTrack& track, int64_t gpu_offset_ns,
                                              uint64_t base_steady_ns);

}  // namespace proton
