// A sampling probe of one thread's program counter (bench only): where the launching thread's
// time goes, by library and symbol, when a profiler makes a launch loop slower and no PMU or
// perf is at hand (the GPU hosts are guests without either).
//
// A POSIX timer on the monotonic clock signals the thread that armed it every `period_us`; the
// handler stores the interrupted program counter under the current label (a variant of the
// loop being timed). Samples are resolved to (library, nearest dynamic symbol) afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace proton::bench {

/// Arms the sampler on the calling thread: room for `capacity` samples, none taken until a
/// label is set. Throws std::runtime_error when the timer or the handler cannot be installed.
void cpu_sampler_start(uint32_t period_us, size_t capacity);
/// Samples from now on count under `label` (>= 0); -1 stops taking them.
void cpu_sampler_label(int label);
/// Disarms the timer and restores the previous handler. Samples stay until the next start.
void cpu_sampler_stop();

struct SampleBucket {
  int label = 0;
  std::string library;  // path of the object the sample fell in, "?" when none
  std::string symbol;   // nearest exported symbol below it, or "+0x<offset / 64 KB>" when none
  std::string caller;   // for samples in libc (system call wrappers, locks): "library symbol"
                        // of the first code addresses on the stack, " | " between; else empty
  uint64_t count = 0;
};

/// The samples taken, grouped by (label, library, symbol); dropped ones (capacity) in `dropped`.
std::vector<SampleBucket> cpu_sampler_report(uint64_t& dropped);

}  // namespace proton::bench
