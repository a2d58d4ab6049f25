#include "data/counter_split.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace proton {

namespace {

constexpr uint64_t kForever = std::numeric_limits<uint64_t>::max();

}  // namespace

void CounterSplit::account(Sample& s, const Kernel& k) {
  uint64_t lo = std::max(s.start, k.start);
  uint64_t hi = std::min(s.end, k.end);
  if (hi <= lo) return;
  s.busy += hi - lo;
  if (!s.has_owner) {
    s.owner = k.owner;
    s.has_owner = true;
  } else if (s.owner != k.owner) {
    s.mixed = true;
  }
}

size_t CounterSplit::first_after(const Device& d, uint64_t t) {
  auto it = std::partition_point(d.samples.begin(), d.samples.end(),
                                 [t](const Sample& s) { return s.end <= t; });
  return static_cast<size_t>(it - d.samples.begin());
}

void CounterSplit::add_samples(const CounterSamples& batch) {
  const size_t m = rules_.size();
  if (batch.schema == nullptr || batch.schema->size() != m || m == 0 ||
      batch.values.size() < batch.size() * m || batch.end_ns.size() != batch.size()) {
    stats_.bad_samples += batch.size();
    return;
  }
  Device& d = devices_[batch.device];
  const size_t first_new = d.samples.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    uint64_t start = batch.start_ns[i], end = batch.end_ns[i];
    // The binary searches need samples in time order and disjoint.
    if (end <= start || start < d.newest_sample_end) {
      ++stats_.bad_samples;
      continue;
    }
    d.samples.push_back(Sample{start, end});
    auto row = batch.row(i);
    d.values.insert(d.values.end(), row.begin(), row.end());
    d.newest_sample_end = end;
    ++stats_.samples;
  }
  if (d.samples.size() == first_new) return;
  // Kernels that arrived before these samples: account their overlap now (each kernel-sample
  // pair is accounted once, by whichever of the two arrives second).
  const uint64_t lo = d.samples[first_new].start;
  const uint64_t hi = d.samples.back().end;
  for (const Kernel& k : d.kernels) {
    if (k.end <= lo || k.start >= hi) continue;
    auto it =
        std::partition_point(d.samples.begin() + static_cast<std::ptrdiff_t>(first_new),
                             d.samples.end(), [&](const Sample& s) { return s.end <= k.start; });
    for (; it != d.samples.end() && it->start < k.end; ++it)
      account(*it, k);
  }
}

void CounterSplit::add_kernel(uint32_t device, uint64_t start_ns, uint64_t end_ns, Owner owner) {
  if (end_ns <= start_ns) {
    ++stats_.unsampled_kernels;
    return;
  }
  Device& d = devices_[device];
  Kernel k{start_ns, end_ns, owner, start_ns < d.split_until};
  for (size_t i = first_after(d, start_ns); i < d.samples.size() && d.samples[i].start < end_ns;
       ++i) {
    account(d.samples[i], k);
  }
  d.newest_kernel_end = std::max(d.newest_kernel_end, end_ns);
  d.longest_kernel = std::max(d.longest_kernel, end_ns - start_ns);
  d.kernels.push_back(k);
  if (d.kernels.size() > limits_.max_kernels) {
    // No samples come to resolve them (sampling stopped or stalled): forget the oldest quarter
    // rather than grow.
    auto by_end = [](const Kernel& a, const Kernel& b) { return a.end < b.end; };
    size_t n = d.kernels.size() / 4 + 1;
    std::nth_element(d.kernels.begin(), d.kernels.begin() + static_cast<std::ptrdiff_t>(n),
                     d.kernels.end(), by_end);
    d.kernels.erase(d.kernels.begin(), d.kernels.begin() + static_cast<std::ptrdiff_t>(n));
    stats_.forced += n;
    stats_.unsampled_kernels += n;
  }
}

bool CounterSplit::split(const Device& d, const Kernel& k, Result& r, std::vector<double>& values) {
  const size_t m = rules_.size();
  const size_t base = values.size();
  values.resize(base + m, 0.0);
  weight_.assign(m, 0.0);
  r = Result{k.owner};
  for (size_t i = first_after(d, k.start); i < d.samples.size() && d.samples[i].start < k.end;
       ++i) {
    const Sample& s = d.samples[i];
    uint64_t lo = std::max(s.start, k.start);
    uint64_t hi = std::min(s.end, k.end);
    if (hi <= lo) continue;
    const double o = static_cast<double>(hi - lo);
    // busy includes this kernel's own overlap; max() only guards a sample whose kernels were
    // accounted before a limit forgot them.
    const double share = o / std::max(static_cast<double>(s.busy), o);
    for (size_t j = 0; j < m; ++j) {
      double v = d.values[i * m + j];
      if (!std::isfinite(v)) continue;
      if (rules_[j] == CounterRule::kSum) {
        values[base + j] += v * share;
        weight_[j] = 1;
      } else {
        values[base + j] += v * o;
        weight_[j] += o;
      }
    }
    r.samples += share;
    if (s.mixed) r.shared += share;
    r.sampled_ns += hi - lo;
  }
  if (r.sampled_ns == 0) {
    values.resize(base);
    return false;
  }
  for (size_t j = 0; j < m; ++j) {
    if (weight_[j] == 0) {
      values[base + j] = std::numeric_limits<double>::quiet_NaN();
    } else if (rules_[j] != CounterRule::kSum) {
      values[base + j] /= weight_[j];
    }
  }
  return true;
}

void CounterSplit::forget_samples_until(Device& d, uint64_t t) {
  const size_t m = rules_.size();
  while (!d.samples.empty() && d.samples.front().end <= t) {
    if (d.samples.front().busy == 0) ++stats_.idle_samples;
    d.split_until = std::max(d.split_until, d.samples.front().end);
    d.samples.pop_front();
    d.values.erase(d.values.begin(), d.values.begin() + static_cast<std::ptrdiff_t>(m));
  }
}

void CounterSplit::resolve_device(Device& d, bool final, std::vector<Result>& out,
                                  std::vector<double>& values) {
  // Every kernel that overlaps a sample ending at or before `horizon` is taken to be here.
  uint64_t horizon = kForever;
  if (!final) {
    uint64_t lag = std::max(limits_.min_lag_ns, 2 * d.longest_kernel);
    horizon = d.newest_kernel_end > lag ? d.newest_kernel_end - lag : 0;
  }
  // Too many samples kept (kernel records stopped coming): split the oldest now.
  uint64_t forced_until = 0;
  if (d.samples.size() > limits_.max_samples) {
    size_t extra = d.samples.size() - limits_.max_samples;
    forced_until = d.samples[extra - 1].end;
    stats_.forced += extra;
    horizon = std::max(horizon, forced_until);
  }
  // Kernels ending at or before `until` have all their samples, and those samples all their
  // kernels. It is a sample boundary, so no sample straddles it.
  uint64_t until = std::min(horizon, d.newest_sample_end);
  size_t j = first_after(d, until);
  until = j == 0 ? std::min(until, d.split_until) : d.samples[j - 1].end;

  uint64_t oldest_waiting = kForever;
  size_t kept = 0;
  for (size_t i = 0; i < d.kernels.size(); ++i) {
    const Kernel& k = d.kernels[i];
    if (k.end > until) {
      oldest_waiting = std::min(oldest_waiting, k.start);
      d.kernels[kept++] = k;
      continue;
    }
    if (k.late) {
      ++stats_.late_kernels;
      continue;
    }
    Result r;
    if (split(d, k, r, values)) {
      out.push_back(r);
      ++stats_.kernels;
    } else {
      ++stats_.unsampled_kernels;
    }
  }
  d.kernels.resize(kept);
  forget_samples_until(d, std::min(until, oldest_waiting));
  if (forced_until > 0) {
    // Kernels still waiting lose the samples forced out from under them.
    for (Kernel& k : d.kernels)
      k.late = k.late || k.start < forced_until;
    forget_samples_until(d, forced_until);
  }
}

void CounterSplit::resolve(bool final, std::vector<Result>& out, std::vector<double>& values) {
  for (auto& [device, d] : devices_)
    resolve_device(d, final, out, values);
}

size_t CounterSplit::waiting_kernels() const {
  size_t n = 0;
  for (const auto& [device, d] : devices_)
    n += d.kernels.size();
  return n;
}

size_t CounterSplit::kept_samples() const {
  size_t n = 0;
  for (const auto& [device, d] : devices_)
    n += d.samples.size();
  return n;
}

}  // namespace proton
