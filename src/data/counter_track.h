// Device-wide counter samples kept for one trace session (PM sampling), and the per-kernel
// averages they give.
//
// Samples arrive in time order per device, in batches, while kernels arrive separately; both
// are kept until the trace is written, so a kernel can be averaged over the samples its
// lifetime covers. Bounded like the trace: at most `max_samples` per session (the newest are
// kept, the rest counted as dropped); at the default 100 us period that is ~100 s of samples.
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "data/counter_batch.h"

namespace proton {

class CounterTrack {
 public:
  struct Sample {
    uint64_t start_ns;  // on the clock of kernel records
    uint64_t end_ns;
    uint32_t device;
    std::vector<double> values;
  };

  explicit CounterTrack(size_t max_samples = 1u << 20) : max_samples_(max_samples) {}

  void add(const CounterSamples& batch);
  const std::deque<Sample>& samples() const { return samples_; }
  const std::vector<std::string>& names() const { return names_; }
  uint64_t dropped() const { return dropped_; }

  /// Averages over the samples of `device` inside [start_ns, end_ns), each weighted by its
  /// overlap with the interval. Returns false (and leaves `out` alone) when fewer than
  /// `min_samples` samples overlap: a kernel shorter than a few periods has no honest average.
  bool average(uint32_t device, uint64_t start_ns, uint64_t end_ns, size_t min_samples,
               std::vector<double>& out) const;

 private:
  size_t max_samples_;
  std::deque<Sample> samples_;
  std::vector<std::string> names_;
  uint64_t dropped_ = 0;
};

}  // namespace proton
