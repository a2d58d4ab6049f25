#include "backends/cupti/pm_sampling.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "attribution/record_processor.h"
#include "backends/cupti/pm_sampling_setup.h"
#include "common/clock.h"
#include "common/thread_name.h"

namespace proton::cupti {

namespace {

constexpr auto kDecodePeriod = std::chrono::milliseconds(kPmDecodePeriodMs);

// The running sampler and the stats of the last one (lock order: g_last_mu, then its mu_).
std::mutex g_last_mu;
PmRunStats g_last_stats;                     // guarded by g_last_mu
std::atomic<PmSampler*> g_running{nullptr};  // written under g_last_mu

}  // namespace

PmSampler::~PmSampler() {
  if (running_) stop();
}

bool PmSampler::start(const CountersApi& api, RecordProcessor* sink, const CounterConfig& config,
                      int local_rank, std::string& notice, bool& user_error, std::string& why) {
  user_error = false;
  api_ = &api;
  sink_ = sink;
  if (!ensure_profiler_initialized(api, why)) return false;
  device_ = pm_device(api, local_rank);
  std::string chip = chip_name(api, device_, why);
  if (chip.empty()) return false;
  std::vector<uint8_t> availability = pm_counter_availability(api, device_);
  if (!host_.init(api, CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, availability, why)) return false;
  // With the Range Profiler beside it (sampling=both), metrics= names the Range Profiler's.
  const bool user_named = config.user_metrics && !config.range_profiler;
  std::vector<std::vector<std::string>> wanted =
      user_named ? config.metrics : default_sampling_metrics();
  std::string notes;
  if (!host_.resolve(wanted, user_named, metrics_, notes, why)) {
    user_error = true;
    return false;
  }
  size_t passes = 0;
  if (!host_.configure(metrics_, config_image_, passes, why)) {
    user_error = user_named;
    return false;
  }
  if (passes > 1) {
    user_error = true;
    why = "PM sampling runs in one pass and these metrics need " + std::to_string(passes) + " on " +
          chip + ": ask for fewer";
    return false;
  }
  metric_ptrs_.clear();
  for (const std::string& m : metrics_)
    metric_ptrs_.push_back(m.c_str());
  schema_ = CounterSchema(metrics_);

  const PmSizes sizes = pm_sizes(config.interval_us, config.pm_buffer_mb, config.pm_image_samples);
  interval_us_ = sizes.interval_us;
  object_ = pm_sampling_begin(api, device_, config_image_, metric_ptrs_, sizes, image_, why);
  if (object_ == nullptr) return false;
  notice = "proton: hardware counters on " + chip + " (device " + std::to_string(device_) +
           ") by PM sampling every " + std::to_string(config.interval_us) + " us (" +
           std::to_string(metrics_.size()) + " device-wide metrics, one pass, no sync): " +
           (config.range_profiler ? std::string("'pm:' values per kernel and counter tracks")
                                  : std::string("each sample's counts are split over the kernels "
                                                "that ran in it (docs/counters.md)"));
  if (!notes.empty()) notice += " [" + notes + "]";
  {
    std::lock_guard lock(mu_);
    stats_ = Stats{};
    stats_.hardware_buffer = sizes.hardware_buffer_bytes;
    stats_.image_bytes = image_.size();
    stats_.interval_ns = uint64_t{sizes.interval_us} * 1000;
  }
  quit_ = false;
  running_ = true;
  {
    std::lock_guard last(g_last_mu);
    g_running.store(this, std::memory_order_release);
  }
  thread_ = std::thread([this] {
    name_this_thread("proton-pmsample");
    worker();
  });
  return true;
}

void PmSampler::worker() {
  std::unique_lock lock(mu_);
  while (!quit_) {
    cv_.wait_for(lock, kDecodePeriod, [&] { return quit_; });
    if (quit_) break;
    decode_once();
  }
}

void PmSampler::decode_once() {
  const uint64_t t0 = steady_ns();
  uint64_t evaluate_ns = 0;
  PmDecodeCounts counts;
  std::vector<double> row(metrics_.size());
  pm_decode(*api_, object_, image_, counts, [&](size_t completed) {
    CounterSamples batch;
    batch.schema = &schema_;
    batch.device = device_;
    batch.start_ns.reserve(completed);
    batch.end_ns.reserve(completed);
    batch.values.reserve(completed * metrics_.size());
    const uint64_t e0 = steady_ns();
    for (size_t i = 0; i < completed; ++i) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params si{};
      si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
      si.pPmSamplingObject = object_;
      si.pCounterDataImage = image_.data();
      si.counterDataImageSize = image_.size();
      si.sampleIndex = i;
      if (api_->cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS) continue;
      if (!host_.evaluate(image_.data(), image_.size(), i, row.data())) continue;
      batch.start_ns.push_back(si.startTimestamp);
      batch.end_ns.push_back(si.endTimestamp);
      batch.values.insert(batch.values.end(), row.begin(), row.end());
    }
    evaluate_ns += steady_ns() - e0;
    stats_.samples += batch.size();
    if (sink_ != nullptr && batch.size() > 0) sink_->deliver(CounterSampleBatch{batch});
  });
  stats_.decodes += counts.decodes;
  stats_.overflows += counts.overflows;
  stats_.errors += counts.errors;
  stats_.decode_ns += steady_ns() - t0;
  stats_.evaluate_ns += evaluate_ns;
}

void PmSampler::flush() {
  if (!running_) return;
  // The sample in progress reaches the hardware buffer only when its interval ends: wait for
  // it, so that the kernels of the last interval before a flush get their samples.
  std::this_thread::sleep_for(
      std::chrono::microseconds(std::min<uint64_t>(2 * uint64_t{interval_us_} + 50, 20000)));
  std::lock_guard lock(mu_);
  decode_once();
}

void PmSampler::stop() {
  if (!running_) return;
  {
    std::lock_guard lock(mu_);
    quit_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  pm_sampling_stop(*api_, object_);
  {
    std::lock_guard lock(mu_);
    decode_once();
  }
  pm_sampling_end(*api_, object_);
  object_ = nullptr;
  running_ = false;
  std::lock_guard last(g_last_mu);
  g_running.store(nullptr, std::memory_order_release);
  g_last_stats = stats();
}

PmSampler::Stats PmSampler::stats() const {
  auto& self = const_cast<PmSampler&>(*this);
  std::lock_guard lock(self.mu_);
  return stats_;
}

PmSampler::Stats PmSampler::last_stats() {
  // Under g_last_mu: stop() clears g_running under it before the sampler can go away.
  std::lock_guard last(g_last_mu);
  if (PmSampler* s = g_running.load(std::memory_order_acquire)) return s->stats();
  return g_last_stats;
}

PmRunStats pm_run_stats() {
  return PmSampler::last_stats();
}

}  // namespace proton::cupti
