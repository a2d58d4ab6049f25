#include "data/counter_track.h"

#include <algorithm>
#include <cmath>

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

bool CounterTrack::average(uint32_t device, uint64_t start_ns, uint64_t end_ns, size_t min_samples,
                           std::vector<double>& out) const {
  if (end_ns <= start_ns || names_.empty()) return false;
  // Samples are in time order: binary-search the first that ends after the kernel starts.
  auto first = std::partition_point(samples_.begin(), samples_.end(),
                                    [&](const Sample& s) { return s.end_ns <= start_ns; });
  std::vector<double> sum(names_.size(), 0.0);
  std::vector<double> weight(names_.size(), 0.0);
  size_t count = 0;
  for (auto it = first; it != samples_.end() && it->start_ns < end_ns; ++it) {
    if (it->device != device || it->end_ns <= it->start_ns) continue;
    uint64_t lo = std::max(start_ns, it->start_ns);
    uint64_t hi = std::min(end_ns, it->end_ns);
    if (hi <= lo) continue;
    double w = static_cast<double>(hi - lo);
    for (size_t m = 0; m < names_.size() && m < it->values.size(); ++m) {
      if (!std::isfinite(it->values[m])) continue;
      sum[m] += it->values[m] * w;
      weight[m] += w;
    }
    ++count;
  }
  if (count < min_samples || count == 0) return false;
  out.assign(names_.size(), std::nan(""));
  for (size_t m = 0; m < names_.size(); ++m) {
    if (weight[m] > 0) out[m] = sum[m] / weight[m];
  }
  return true;
}

}  // namespace proton
