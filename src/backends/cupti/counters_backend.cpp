// The CUPTI backend's hardware-counter half: starts the Range Profiler and/or PM
// sampling next to kernel timing, and never lets them stop kernel timing.
#include <cstdio>

#include "backends/cupti/counters_api.h"
#include "backends/cupti/cupti_backend.h"

namespace proton::cupti {

void CuptiBackend::start_counters(const CounterConfig& config, int local_rank) {
  counters_problem_.clear();
  counters_user_error_ = false;
  std::string why;
  const CountersApi* api = load_counters_api(*api_, why);
  if (api == nullptr) {
    counters_problem_ = why;
    return;
  }
  std::string notice;
  bool user_error = false;
  if (config.range_profiler) {
    if (!ranges_) ranges_ = std::make_unique<RangeProfiler>();
    if (!ranges_->start(*api, processor_, config, notice, user_error, why)) {
      counters_problem_ = why;
      counters_user_error_ = user_error;
      ranges_.reset();
      return;
    }
    std::fprintf(stderr, "%s\n", notice.c_str());
  }
  if (config.pm_sampling) {
    if (!sampler_) sampler_ = std::make_unique<PmSampler>();
    if (!sampler_->start(*api, processor_, config, local_rank, notice, user_error, why)) {
      counters_problem_ = "PM sampling: " + why;
      counters_user_error_ = user_error;
      sampler_.reset();
      if (ranges_) {
        ranges_->stop();
        ranges_.reset();
      }
      return;
    }
    std::fprintf(stderr, "%s\n", notice.c_str());
  }
}

void CuptiBackend::flush_counters() {
  if (ranges_) ranges_->flush();
  if (sampler_) sampler_->flush();
}

void CuptiBackend::stop_counters() {
  // A refused counters setup must not follow the backend into its next start.
  counters_problem_.clear();
  counters_user_error_ = false;
  if (ranges_) {
    ranges_->stop();
    ranges_.reset();
  }
  if (sampler_) {
    sampler_->stop();
    sampler_.reset();
  }
}

}  // namespace proton::cupti
