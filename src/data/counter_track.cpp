#include "data/counter_track.h"

namespace proton {

void CounterTrack::add(const CounterSamples& batch) {
  if (batch.schema == nullptr) return;
  if (names_.empty()) names_ = batch.schema->names();
  for (size_t i = 0; i < batch.size(); ++i) {
    auto row = batch.row(i);
    samples_.push_back(Sample{batch.start_ns[i], batch.end_ns[i], batch.device,
                              std::vector<double>(row.begin(), row.end())});
    if (samples_.size() > max_samples_) {
      samples_.pop_front();
      ++dropped_;
    }
  }
}

}  // namespace proton
