#include "data/counter_join.h"

namespace proton {

bool CounterJoin::kernel(uint64_t correlation, const Target& target, std::vector<double>& out) {
  auto v = values_.find(correlation);
  if (v != values_.end()) {
    out = std::move(v->second);
    values_.erase(v);
    ++stats_.joined;
    return true;
  }
  auto [it, inserted] = kernels_.try_emplace(correlation, target);
  if (!inserted) {
    // Another kernel of the same graph launch: the launch's values cover them all.
    it->second.duration_ns += target.duration_ns;
    return false;
  }
  if (kernels_.size() > capacity_) {
    kernels_.erase(kernels_.begin());
    ++stats_.dropped_kernels;
  }
  return false;
}

bool CounterJoin::values(uint64_t correlation, std::span<const double> in, Target& target) {
  auto k = kernels_.find(correlation);
  if (k != kernels_.end()) {
    target = k->second;
    kernels_.erase(k);
    ++stats_.joined;
    return true;
  }
  values_[correlation].assign(in.begin(), in.end());
  if (values_.size() > capacity_) {
    values_.erase(values_.begin());
    ++stats_.dropped_values;
  }
  return false;
}

void CounterJoin::settle() {
  stats_.dropped_kernels += kernels_.size();
  kernels_.clear();
}

void CounterJoin::clear() {
  kernels_.clear();
  values_.clear();
}

}  // namespace proton
