#include "context/scope_metric_sets.h"

namespace proton {

ScopeMetricSets& ScopeMetricSets::global() {
  // Leaked on purpose: the record thread may release sets during static destruction.
  static ScopeMetricSets* sets = new ScopeMetricSets();
  return *sets;
}

uint32_t ScopeMetricSets::add(Metrics metrics) {
  std::lock_guard lock(mu_);
  uint32_t id = 0;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    sets_.emplace_back();
    id = static_cast<uint32_t>(sets_.size());
  }
  Set& s = sets_[id - 1];
  s.metrics = std::move(metrics);
  s.refs = 1;
  ++live_;
  return id;
}

void ScopeMetricSets::retain(uint32_t id) {
  if (id == 0) return;
  std::lock_guard lock(mu_);
  ++sets_[id - 1].refs;
}

void ScopeMetricSets::release(uint32_t id) {
  if (id == 0) return;
  std::lock_guard lock(mu_);
  Set& s = sets_[id - 1];
  if (s.refs == 0 || --s.refs != 0) return;
  s.metrics.clear();
  s.metrics.shrink_to_fit();
  free_.push_back(id);
  --live_;
}

const ScopeMetricSets::Metrics& ScopeMetricSets::get(uint32_t id) const {
  static const Metrics kNone;
  std::lock_guard lock(mu_);  // the deque's index, not the set, needs it
  return id != 0 && id <= sets_.size() ? sets_[id - 1].metrics : kNone;
}

size_t ScopeMetricSets::live() const {
  std::lock_guard lock(mu_);
  return live_;
}

}  // namespace proton
