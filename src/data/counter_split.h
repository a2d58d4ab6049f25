// Per-kernel counter values from device-wide samples (PM sampling, mode="counters").
//
// The GPU reports its counters every sample interval for the whole device; it cannot say which
// kernel moved which byte. So each sample's counts are split over the kernels that ran during
// it, in proportion to how long each overlapped it:
//
//   sum metrics (".sum": bytes, instructions, cycles)
//       kernel k gets  value_s * overlap(k, s) / busy_s  from each sample s it overlaps, where
//       busy_s is the summed overlap of every kernel with s. A kernel alone in its samples gets
//       their whole counts, however short it is (an idle GPU counts nothing, so the idle rest of
//       a sample adds nothing); kernels sharing a sample, one after the other or concurrently,
//       share its counts by time.
//   time-weighted metrics (percentages, ratios, rates)
//       kernel k gets the average of its samples' values weighted by overlap. "_active" ratios
//       (e.g. tensor pipe cycles per *active* SM cycle) are not diluted by the idle part of a
//       sample; "_elapsed" ones are, which is why the default set prefers "_active".
//
// Each result also says how much to trust it: `samples`, the sample intervals' worth of counts
// the kernel received (sum of overlap / busy), and `shared`, the part of that which came from
// samples where kernels of other owners (other call-tree nodes) also ran. shared == 0: the
// values are the owner's own (up to work outside kernels, e.g. copy engines); shared close to
// samples: they are a time-proportional estimate.
//
// Streaming and bounded. Samples arrive in time order per device every few milliseconds;
// kernel records arrive separately, in batches, later (activity buffers) and not in time order
// across streams. A sample's split is final once every kernel that overlaps it has arrived; we
// take that to be so once a kernel ending `lag` after it has arrived, where lag is the larger of
// `Limits::min_lag_ns` and twice the longest kernel seen (a concurrent kernel longer than that
// whose record comes later is "late": it gets no values, and its share went to the others).
// resolve(final=true), at a flush, treats every kernel delivered so far as all there is.
// Memory: at most `max_samples` samples and `max_kernels` waiting kernels per device; past
// that the oldest are resolved early (and counted).
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "data/counter_batch.h"
#include "data/counter_rules.h"

namespace proton {

class CounterSplit {
 public:
  /// Who a kernel's values belong to: the caller's key (the session packs phase and node).
  /// Samples shared by kernels of one owner are not "shared".
  using Owner = uint64_t;

  struct Limits {
    size_t max_samples = size_t{1} << 17;  // per device: ~13 s at 100 us, ~12 MB at 7 metrics
    size_t max_kernels = size_t{1} << 18;  // waiting kernels per device (~10 MB)
    uint64_t min_lag_ns = 50'000'000;      // 50 ms of GPU time
  };

  struct Result {
    Owner owner = 0;
    uint64_t sampled_ns = 0;  // the kernel's time inside samples: weighs time-weighted values
    double samples = 0;       // sample intervals' worth of counts it received
    double shared = 0;        // of which from samples shared with other owners' kernels
  };

  struct Stats {
    uint64_t samples = 0;            // samples received
    uint64_t bad_samples = 0;        // empty, or out of time order (ignored)
    uint64_t idle_samples = 0;       // samples no kernel overlapped (their counts go nowhere)
    uint64_t kernels = 0;            // kernels given values
    uint64_t unsampled_kernels = 0;  // kernels no sample covered (before/after sampling, gaps)
    uint64_t late_kernels = 0;       // kernels whose samples were split before they arrived
    uint64_t forced = 0;             // samples or kernels resolved early by the limits
  };

  CounterSplit() : CounterSplit(Limits{}) {}
  explicit CounterSplit(Limits limits) : limits_(limits) {}

  /// The rule of each metric, in the order of the samples' values. Set once, before (or with)
  /// the first samples; samples with another number of values are ignored.
  void set_rules(std::vector<CounterRule> rules) { rules_ = std::move(rules); }
  size_t metrics() const { return rules_.size(); }

  void add_samples(const CounterSamples& batch);
  void add_kernel(uint32_t device, uint64_t start_ns, uint64_t end_ns, Owner owner);

  /// Appends the kernels that can be resolved now to `out`, and their values (metrics() per
  /// result, NaN = none) to `values`. final: every kernel delivered so far is all there will be
  /// for the samples received so far (a flush); kernels not yet covered by samples wait on.
  void resolve(bool final, std::vector<Result>& out, std::vector<double>& values);

  const Stats& stats() const { return stats_; }
  size_t waiting_kernels() const;
  size_t kept_samples() const;

 private:
  struct Sample {
    uint64_t start, end;
    uint64_t busy = 0;  // summed overlap of the kernels seen so far
    Owner owner = 0;    // the first kernel's owner
    bool has_owner = false;
    bool mixed = false;  // kernels of more than one owner
  };
  struct Kernel {
    uint64_t start, end;
    Owner owner;
    bool late;
  };
  struct Device {
    std::deque<Sample> samples;   // time order, not overlapping
    std::deque<double> values;    // metrics() per sample, parallel to samples
    std::vector<Kernel> kernels;  // waiting, any order
    uint64_t newest_sample_end = 0;
    uint64_t newest_kernel_end = 0;
    uint64_t longest_kernel = 0;
    uint64_t split_until = 0;  // samples ending at or before this were split and forgotten
  };

  static void account(Sample& s, const Kernel& k);
  // Index of the first kept sample that ends after `t`.
  static size_t first_after(const Device& d, uint64_t t);
  void resolve_device(Device& d, bool final, std::vector<Result>& out, std::vector<double>& values);
  // Splits the samples under `k` into its result; false when no sample covers it.
  bool split(const Device& d, const Kernel& k, Result& r, std::vector<double>& values);
  void forget_samples_until(Device& d, uint64_t t);

  Limits limits_;
  std::vector<CounterRule> rules_;
  std::map<uint32_t, Device> devices_;
  std::vector<double> weight_;  // split()'s scratch: overlap per time-weighted metric
  Stats stats_;
};

}  // namespace proton
