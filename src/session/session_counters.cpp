// Session's hardware-counter half (mode="counters"): joins per-launch values with kernel
// records and keeps PM samples. Kept apart from session.cpp so the counters feature is one
// file on the session side; the rules themselves live in data/counter_*.
#include <algorithm>

#include "data/counter_rules.h"
#include "session/session.h"

namespace proton {

namespace {

// A kernel needs at least this many PM samples under it for a per-kernel average (below
// that, one sample straddling the kernel's edges dominates).
constexpr size_t kMinSamplesPerKernel = 3;
// Kernels remembered for PM averages: only long ones (>= kMinSamplesPerKernel periods) are, and
// they are resolved at every flush; the cap keeps a pathological run bounded.
constexpr size_t kMaxLongKernels = 1u << 16;

}  // namespace

void Session::enable_counters(bool per_launch, bool samples) {
  std::lock_guard lock(mu);
  if (per_launch && !counters_) counters_ = std::make_unique<CounterJoin>();
  if (samples && !counter_track_) counter_track_ = std::make_unique<CounterTrack>();
}

uint32_t Session::phase_for(const LaunchTag& tag) const {
  uint32_t now = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
  uint32_t epoch = now - ((now - tag_epoch(tag)) & kTagEpochMask);
  auto after = std::upper_bound(phase_starts_.begin(), phase_starts_.end(), epoch);
  return static_cast<uint32_t>(after == phase_starts_.begin() ? 0
                                                              : after - phase_starts_.begin() - 1);
}

void Session::join_counters(const LaunchTag& tag, CallTree::NodeId node, const KernelRecord& r) {
  uint64_t duration = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
  uint32_t phase = phase_for(tag);
  if (counters_) {
    std::vector<double> values;
    CounterJoin::Target target{phase, node, duration};
    if (counters_->kernel(r.correlation, target, values) && counter_schema_ != nullptr) {
      if (CallTree* t = phase_tree(phase))
        attach_counters(*t, node, duration, *counter_schema_, values);
    }
  }
  if (counter_track_ && duration > 0 && long_kernels_.size() < kMaxLongKernels) {
    // Whether it spans enough samples is known only once the period is: keep every kernel
    // that is not obviously short (1 us), decide at settle.
    if (duration >= 1000) {
      long_kernels_.push_back({phase, node, r.device_id, r.start_ns, r.end_ns});
    }
  }
}

void Session::add_counters(const LaunchCounters& batch) {
  std::lock_guard lock(mu);
  if (!counters_ || batch.schema == nullptr) return;
  counter_schema_ = batch.schema;
  for (size_t i = 0; i < batch.size(); ++i) {
    CounterJoin::Target target;
    if (!counters_->values(batch.correlation[i], batch.row(i), target)) continue;
    if (CallTree* t = phase_tree(target.phase)) {
      attach_counters(*t, target.node, target.duration_ns, *batch.schema, batch.row(i));
    }
  }
}

void Session::add_counter_samples(const CounterSamples& batch) {
  std::lock_guard lock(mu);
  if (!counter_track_ || batch.schema == nullptr) return;
  counter_track_->add(batch);
  if (!pm_schema_) {
    std::vector<std::string> names;
    for (const std::string& n : batch.schema->names())
      names.push_back(std::string(kPmPrefix) + n);
    pm_schema_ = std::make_unique<CounterSchema>(std::move(names), kPmCounterTimeMetric);
  }
}

void Session::settle_counters() {
  std::lock_guard lock(mu);
  if (counters_) counters_->settle();
  if (!counter_track_ || !pm_schema_) return;
  std::vector<double> avg;
  // Kernels whose samples may not have been decoded yet stay for the next settle: a kernel is
  // resolved once a sample ending after it exists.
  uint64_t newest = counter_track_->samples().empty() ? 0 : counter_track_->samples().back().end_ns;
  std::vector<LongKernel> keep;
  for (const LongKernel& k : long_kernels_) {
    if (k.end_ns > newest) {
      keep.push_back(k);
      continue;
    }
    if (!counter_track_->average(k.device, k.start_ns, k.end_ns, kMinSamplesPerKernel, avg))
      continue;
    if (CallTree* t = phase_tree(k.phase)) {
      attach_counters(*t, k.node, k.end_ns - k.start_ns, *pm_schema_, avg);
    }
  }
  long_kernels_ = std::move(keep);
}

}  // namespace proton
