// Device-wide counter samples kept for one trace session (PM sampling): its counter tracks.
// (Per-kernel values come from data/counter_split.h, which keeps samples only until split.)
//
// Samples arrive in time order per device, in batches, and are kept until the trace is
// written. Bounded like the trace: at most `max_samples` per session (the newest are kept, the
// rest counted as dropped); at the default 100 us period that is ~100 s of samples.
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

 private:
  size_t max_samples_;
  std::deque<Sample> samples_;
  std::vector<std::string> names_;
  uint64_t dropped_ = 0;
};

}  // namespace proton
