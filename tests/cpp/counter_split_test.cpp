// PM samples split over kernels (data/counter_split.h) with synthetic samples and kernel
// records: a kernel inside one sample, a sample spanning two kernels, concurrent kernels, gaps,
// samples with no kernel, arrival in either order, the streaming horizon, late kernels, the
// limits, and the conservation of summed counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "data/counter_split.h"

namespace proton {
namespace {

// Metric 0 sums (bytes), metric 1 is time-weighted (a percentage).
const CounterSchema& schema() {
  static const CounterSchema s({"dram__bytes_read.sum", "sm__x.avg.pct_of_peak_sustained_active"});
  return s;
}

CounterSplit make(CounterSplit::Limits limits = {}) {
  CounterSplit split(limits);
  split.set_rules({CounterRule::kSum, CounterRule::kTimeWeighted});
  return split;
}

struct PmSample {
  uint64_t start, end;
  double bytes, pct;
};

CounterSamples pm_batch(const std::vector<PmSample>& samples, uint32_t device = 0) {
  CounterSamples b;
  b.schema = &schema();
  b.device = device;
  for (const PmSample& s : samples) {
    b.start_ns.push_back(s.start);
    b.end_ns.push_back(s.end);
    b.values.push_back(s.bytes);
    b.values.push_back(s.pct);
  }
  return b;
}

struct Out {
  CounterSplit::Result r;
  double bytes, pct;
};

// Results by owner (each owner has one kernel in these tests unless said).
std::map<uint64_t, Out> resolve(CounterSplit& split, bool final) {
  std::vector<CounterSplit::Result> results;
  std::vector<double> values;
  split.resolve(final, results, values);
  EXPECT_EQ(values.size(), results.size() * 2);
  std::map<uint64_t, Out> out;
  for (size_t i = 0; i < results.size(); ++i)
    out[results[i].owner] = Out{results[i], values[2 * i], values[2 * i + 1]};
  return out;
}

TEST(CounterSplit, AKernelAloneInsideOneSampleGetsItsWholeCounts) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 1000, 40}, {100, 200, 0, 0}}));
  split.add_kernel(0, 30, 40, /*owner=*/7);  // 10 ns of a 100 ns sample, the rest idle
  auto out = resolve(split, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[7].bytes, 1000);  // not 10% of it: an idle GPU counts nothing
  EXPECT_DOUBLE_EQ(out[7].pct, 40);
  EXPECT_EQ(out[7].r.sampled_ns, 10u);
  EXPECT_DOUBLE_EQ(out[7].r.samples, 1.0);
  EXPECT_DOUBLE_EQ(out[7].r.shared, 0.0);
}

TEST(CounterSplit, ASampleSpanningTwoKernelsIsSplitByOverlap) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 1000, 50}}));
  split.add_kernel(0, 0, 25, 1);
  split.add_kernel(0, 25, 100, 2);
  auto out = resolve(split, true);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_DOUBLE_EQ(out[1].bytes, 250);
  EXPECT_DOUBLE_EQ(out[2].bytes, 750);
  EXPECT_DOUBLE_EQ(out[1].pct, 50);  // a ratio: the sample's value, for both
  EXPECT_DOUBLE_EQ(out[2].pct, 50);
  EXPECT_DOUBLE_EQ(out[1].r.samples, 0.25);
  EXPECT_DOUBLE_EQ(out[1].r.shared, 0.25);  // shared with another owner's kernel
  EXPECT_DOUBLE_EQ(out[2].r.shared, 0.75);
}

TEST(CounterSplit, KernelsOfOneOwnerSharingASampleAreNotShared) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 900, 50}}));
  for (uint64_t t : {0, 30, 60})
    split.add_kernel(0, t, t + 30, 5);  // three launches of one node
  std::vector<CounterSplit::Result> results;
  std::vector<double> values;
  split.resolve(true, results, values);
  ASSERT_EQ(results.size(), 3u);
  double bytes = 0, shared = 0;
  for (size_t i = 0; i < 3; ++i) {
    bytes += values[2 * i];
    shared += results[i].shared;
  }
  EXPECT_DOUBLE_EQ(bytes, 900);
  EXPECT_DOUBLE_EQ(shared, 0);
}

TEST(CounterSplit, ConcurrentKernelsShareByOverlap) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 900, 60}, {100, 200, 300, 20}}));
  split.add_kernel(0, 0, 200, 1);   // both samples
  split.add_kernel(0, 50, 100, 2);  // concurrently with 1, in the first sample only
  auto out = resolve(split, true);
  // Sample 0: busy 100 + 50 = 150 -> 1 gets 2/3, 2 gets 1/3. Sample 1: all to 1.
  EXPECT_NEAR(out[1].bytes, 600 + 300, 1e-9);
  EXPECT_NEAR(out[2].bytes, 300, 1e-9);
  EXPECT_NEAR(out[1].pct, (60 * 100 + 20 * 100) / 200.0, 1e-9);
  EXPECT_NEAR(out[2].pct, 60, 1e-9);
  EXPECT_EQ(out[1].r.sampled_ns, 200u);
  EXPECT_NEAR(out[1].r.samples, 2.0 / 3 + 1, 1e-9);
  EXPECT_NEAR(out[1].r.shared, 2.0 / 3, 1e-9);
}

TEST(CounterSplit, AKernelOverSeveralSamplesAddsThemUp) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 100, 10}, {100, 200, 200, 20}, {200, 300, 300, 30}}));
  split.add_kernel(0, 50, 250, 3);
  auto out = resolve(split, true);
  EXPECT_DOUBLE_EQ(out[3].bytes, 600);  // alone in all three
  EXPECT_DOUBLE_EQ(out[3].pct, (10 * 50 + 20 * 100 + 30 * 50) / 200.0);
  EXPECT_DOUBLE_EQ(out[3].r.samples, 3.0);
}

TEST(CounterSplit, GapsAndSamplesWithNoKernel) {
  CounterSplit split = make();
  // A gap in sampling from 100 to 300; an idle sample at 300.
  split.add_samples(pm_batch({{0, 100, 100, 10}, {300, 400, 50, 5}, {400, 500, 70, 7}}));
  split.add_kernel(0, 150, 250, 1);  // entirely in the gap: no values
  split.add_kernel(0, 420, 480, 2);
  split.add_kernel(0, 10, 20, 3);
  auto out = resolve(split, true);
  EXPECT_EQ(out.count(1), 0u);
  EXPECT_DOUBLE_EQ(out[2].bytes, 70);
  EXPECT_DOUBLE_EQ(out[3].bytes, 100);
  EXPECT_EQ(split.stats().unsampled_kernels, 1u);
  EXPECT_EQ(split.stats().idle_samples, 1u);  // the one at 300: its counts go to no kernel
  EXPECT_EQ(split.kept_samples(), 0u);
}

TEST(CounterSplit, EitherArrivalOrderGivesTheSameValues) {
  std::vector<PmSample> samples = {{0, 100, 1000, 50}, {100, 200, 500, 30}};
  struct K {
    uint64_t start, end, owner;
  };
  std::vector<K> kernels = {{10, 60, 1}, {40, 150, 2}, {160, 170, 3}};
  CounterSplit a = make(), b = make();
  a.add_samples(pm_batch(samples));
  for (const K& k : kernels)
    a.add_kernel(0, k.start, k.end, k.owner);
  for (const K& k : kernels)
    b.add_kernel(0, k.start, k.end, k.owner);
  b.add_samples(pm_batch({samples[0]}));  // and in two batches
  b.add_samples(pm_batch({samples[1]}));
  auto oa = resolve(a, true), ob = resolve(b, true);
  ASSERT_EQ(oa.size(), 3u);
  for (uint64_t o : {1, 2, 3}) {
    EXPECT_DOUBLE_EQ(oa[o].bytes, ob[o].bytes) << o;
    EXPECT_DOUBLE_EQ(oa[o].pct, ob[o].pct) << o;
    EXPECT_DOUBLE_EQ(oa[o].r.samples, ob[o].r.samples) << o;
  }
}

TEST(CounterSplit, KernelsWaitForTheHorizonUnlessFinal) {
  CounterSplit::Limits limits;
  limits.min_lag_ns = 1000;
  CounterSplit split = make(limits);
  split.add_samples(pm_batch({{0, 100, 10, 1}, {100, 200, 20, 2}, {200, 300, 30, 3}}));
  split.add_kernel(0, 10, 20, 1);
  // Newest kernel end 20: nothing is 1000 ns behind it, so nothing is final yet.
  EXPECT_TRUE(resolve(split, false).empty());
  EXPECT_EQ(split.waiting_kernels(), 1u);
  // A kernel ending at 1250: samples ending by 250 (snapped to 200) are complete.
  split.add_kernel(0, 1240, 1250, 2);
  auto out = resolve(split, false);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[1].bytes, 10);
  EXPECT_EQ(split.kept_samples(), 1u);  // [200, 300) may still get kernels
  // A kernel over forgotten samples arrives late: it gets nothing, and says so.
  split.add_kernel(0, 50, 60, 3);
  split.add_samples(pm_batch({{1200, 1300, 40, 4}}));
  out = resolve(split, true);
  EXPECT_EQ(out.count(3), 0u);
  EXPECT_DOUBLE_EQ(out[2].bytes, 40);
  EXPECT_EQ(split.stats().late_kernels, 1u);
}

TEST(CounterSplit, AKernelLongerThanTheLagHoldsItsSamples) {
  CounterSplit::Limits limits;
  limits.min_lag_ns = 100;
  CounterSplit split = make(limits);
  std::vector<PmSample> samples;
  for (uint64_t t = 0; t < 2000; t += 100)
    samples.push_back({t, t + 100, 1, 1});
  split.add_samples(pm_batch(samples));
  split.add_kernel(0, 0, 1000, 1);     // long
  split.add_kernel(0, 1500, 1510, 2);  // horizon = 1510 - 2 * 1000 < 0: nothing yet
  EXPECT_TRUE(resolve(split, false).empty());
  split.add_kernel(0, 2500, 2510, 3);  // horizon 510: the long kernel is not complete
  EXPECT_TRUE(resolve(split, false).empty());
  split.add_kernel(0, 3500, 3510, 4);  // horizon 1510
  auto out = resolve(split, false);
  ASSERT_EQ(out.count(1), 1u);
  EXPECT_DOUBLE_EQ(out[1].bytes, 10);
}

TEST(CounterSplit, LimitsBoundMemoryAndCountWhatTheyCut) {
  CounterSplit::Limits limits;
  limits.max_samples = 4;
  limits.max_kernels = 8;
  CounterSplit split = make(limits);
  std::vector<PmSample> samples;
  for (uint64_t t = 0; t < 1000; t += 100)
    samples.push_back({t, t + 100, 1, 1});
  split.add_kernel(0, 150, 950, 1);  // waits: no kernel past the horizon yet
  split.add_samples(pm_batch(samples));
  auto out = resolve(split, false);
  EXPECT_LE(split.kept_samples(), 4u);
  EXPECT_GT(split.stats().forced, 0u);
  out = resolve(split, true);
  EXPECT_EQ(out.count(1), 0u);  // its first samples were forced out: late
  EXPECT_EQ(split.stats().late_kernels, 1u);
  for (uint64_t i = 0; i < 20; ++i)
    split.add_kernel(1, 10 + i, 20 + i, 2);  // device 1 never samples
  EXPECT_LE(split.waiting_kernels(), 8u);
}

TEST(CounterSplit, BadSamplesAndNaNsAreSkipped) {
  CounterSplit split = make();
  split.add_samples(pm_batch({{0, 100, 10, 1}, {50, 150, 99, 99}, {200, 200, 99, 99}}));
  EXPECT_EQ(split.stats().bad_samples, 2u);  // overlapping, empty
  split.add_samples(pm_batch({{100, 200, std::nan(""), 5}}));
  split.add_kernel(0, 0, 200, 1);
  auto out = resolve(split, true);
  EXPECT_DOUBLE_EQ(out[1].bytes, 10);  // the NaN sample adds nothing to the sum
  EXPECT_DOUBLE_EQ(out[1].pct, 3);
  CounterSamples wrong = pm_batch({{300, 400, 1, 1}});
  wrong.values.pop_back();  // fewer values than metrics: refused whole
  split.add_samples(wrong);
  EXPECT_EQ(split.stats().bad_samples, 3u);
}

TEST(CounterSplit, SummedCountsAreConserved) {
  // Random kernels on three owners over random samples: every count of a sample that some
  // kernel overlapped ends on exactly one kernel, whatever the interleaving of arrivals.
  std::mt19937_64 rng(42);
  CounterSplit::Limits limits;
  limits.min_lag_ns = 500;
  CounterSplit split = make(limits);
  std::vector<PmSample> samples;
  for (uint64_t t = 0; t < 100000; t += 100)
    samples.push_back({t, t + 100, double(rng() % 1000), double(rng() % 100)});
  struct K {
    uint64_t start, end, owner;
  };
  std::vector<K> kernels;
  for (int i = 0; i < 2000; ++i) {
    uint64_t start = rng() % 99000;
    kernels.push_back({start, start + 1 + rng() % 400, rng() % 3});
  }
  std::sort(kernels.begin(), kernels.end(), [](const K& a, const K& b) { return a.end < b.end; });
  double got = 0;
  std::vector<CounterSplit::Result> results;
  std::vector<double> values;
  size_t next_sample = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    split.add_kernel(0, kernels[i].start, kernels[i].end, kernels[i].owner);
    if (i % 50 == 49) {  // a batch of samples now and then, and a resolve
      size_t until = std::min(samples.size(), next_sample + 100 + rng() % 200);
      split.add_samples(pm_batch({samples.begin() + next_sample, samples.begin() + until}));
      next_sample = until;
      split.resolve(false, results, values);
    }
  }
  split.add_samples(pm_batch({samples.begin() + next_sample, samples.end()}));
  split.resolve(true, results, values);
  for (size_t i = 0; i < results.size(); ++i)
    got += values[2 * i];
  double expected = 0;
  for (const PmSample& s : samples) {
    bool covered = std::any_of(kernels.begin(), kernels.end(),
                               [&](const K& k) { return k.start < s.end && k.end > s.start; });
    if (covered) expected += s.bytes;
  }
  EXPECT_EQ(split.stats().late_kernels, 0u);
  EXPECT_EQ(results.size(), kernels.size());
  EXPECT_NEAR(got, expected, 1e-6 * expected);
}

}  // namespace
}  // namespace proton
