// Session's hardware-counter half (mode="counters"): splits PM samples over the kernels that ran
// in them, joins Range-Profiler values with kernel records, keeps samples for counter tracks.
// Kept apart from session.cpp so the counters feature is one file on the session side; the
// rules themselves live in data/counter_*.
#include <algorithm>

#include "common/name_table.h"
#include "data/counter_rules.h"
#include "session/session.h"

namespace proton {

namespace {

// The split's owner key: the phase and the node the kernel landed on.
CounterSplit::Owner owner_of(uint32_t phase, CallTree::NodeId node) {
  return (uint64_t{phase} << 32) | node;
}

}  // namespace

void Session::enable_counters(bool per_launch, bool samples) {
  std::lock_guard lock(mu);
  if (per_launch && !counters_) counters_ = std::make_unique<CounterJoin>();
  if (samples) {
    if (data_.trace && !counter_track_) counter_track_ = std::make_unique<CounterTrack>();
    if (data_.tree && !split_) {
      split_ = std::make_unique<CounterSplit>();
      split_prefixed_ = per_launch;
    }
  }
  if (counters_enabled() && !collectors_[kCounters]) {
    add_collector(kCounters, std::make_unique<CounterCollector>(*this));
  }
}

CounterCollector::CounterCollector(Session& s)
    : Collector(s, record_bit<KernelDone>() | record_bit<LaunchCounterValues>() |
                       record_bit<CounterSampleBatch>()) {}

void CounterCollector::collect(const Record& record) {
  Session& s = session_;
  if (const auto* k = std::get_if<KernelDone>(&record)) {
    if (s.placed_.tree == nullptr) return;  // on no tree: nothing to join or split
    const KernelRecord& r = k->kernel;
    const auto [tree, phase, node] = s.placed_;
    uint64_t duration = r.end_ns > r.start_ns ? r.end_ns - r.start_ns : 0;
    if (s.counters_) {
      std::vector<double> values;
      CounterJoin::Target target{phase, node, duration};
      if (s.counters_->kernel(r.correlation, target, values) && s.counter_schema_ != nullptr) {
        attach_counters(*tree, node, duration, *s.counter_schema_, values);
      }
    }
    if (s.split_) s.split_->add_kernel(r.device_id, r.start_ns, r.end_ns, owner_of(phase, node));
    return;
  }
  if (const auto* values = std::get_if<LaunchCounterValues>(&record)) {
    const LaunchCounters& batch = values->batch;
    if (!s.counters_ || batch.schema == nullptr) return;
    s.counter_schema_ = batch.schema;
    for (size_t i = 0; i < batch.size(); ++i) {
      CounterJoin::Target target;
      if (!s.counters_->values(batch.correlation[i], batch.row(i), target)) continue;
      if (CallTree* t = s.phase_tree(target.phase)) {
        attach_counters(*t, target.node, target.duration_ns, *batch.schema, batch.row(i));
      }
    }
    return;
  }
  const CounterSamples& batch = std::get<CounterSampleBatch>(record).batch;
  if (batch.schema == nullptr) return;
  if (s.counter_track_) s.counter_track_->add(batch);
  if (!s.split_) return;
  if (!s.split_schema_) {
    std::string prefix = s.split_prefixed_ ? std::string(kPmPrefix) : std::string();
    std::vector<std::string> names;
    for (const std::string& n : batch.schema->names())
      names.push_back(prefix + n);
    s.split_schema_ = std::make_unique<CounterSchema>(
        std::move(names), s.split_prefixed_ ? kPmCounterTimeMetric : kCounterTimeMetric);
    std::vector<CounterRule> rules;
    for (size_t i = 0; i < s.split_schema_->size(); ++i)
      rules.push_back(s.split_schema_->rule(i));
    s.split_->set_rules(std::move(rules));
    s.split_samples_id_ = NameTable::global().intern(prefix + "counter samples");
    s.split_shared_id_ = NameTable::global().intern(prefix + "counter samples shared");
  }
  s.split_->add_samples(batch);
  s.attach_split(/*final=*/false);
}

void Session::attach_split(bool final) {
  split_results_.clear();
  split_values_.clear();
  split_->resolve(final, split_results_, split_values_);
  const size_t m = split_->metrics();
  for (size_t i = 0; i < split_results_.size(); ++i) {
    const CounterSplit::Result& r = split_results_[i];
    CallTree* t = phase_tree(static_cast<uint32_t>(r.owner >> 32));
    if (t == nullptr || split_schema_ == nullptr) continue;
    auto node = static_cast<CallTree::NodeId>(r.owner & 0xffffffffu);
    attach_counters(*t, node, r.sampled_ns, *split_schema_,
                    std::span<const double>(split_values_.data() + i * m, m));
    try {
      t->add_metric(node, split_samples_id_, MetricValue{r.samples});
      t->add_metric(node, split_shared_id_, MetricValue{r.shared});
    } catch (const MetricTypeError&) {
    }
  }
}

void Session::settle_counters() {
  std::lock_guard lock(mu);
  if (counters_) counters_->settle();
  if (!split_) return;
  attach_split(/*final=*/true);
  // What the split could not place, on the root, so that a profile says how complete its
  // counters are.
  if (!data_.tree) return;
  const CounterSplit::Stats& now = split_->stats();
  auto put = [&](const char* name, uint64_t value, uint64_t& written) {
    if (value == written) return;
    std::string full = (split_prefixed_ ? std::string(kPmPrefix) : std::string()) + name;
    try {
      tree().add_metric(CallTree::kRoot, NameTable::global().intern(full),
                        MetricValue{static_cast<int64_t>(value - written)});
    } catch (const MetricTypeError&) {
    }
    written = value;
  };
  put("counter samples idle", now.idle_samples, split_written_.idle_samples);
  put("counter kernels unsampled", now.unsampled_kernels, split_written_.unsampled_kernels);
  put("counter kernels late", now.late_kernels, split_written_.late_kernels);
}

}  // namespace proton
