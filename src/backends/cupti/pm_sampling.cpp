#include "backends/cupti/pm_sampling.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "attribution/record_processor.h"
#include "common/clock.h"

namespace proton::cupti {

namespace {

// Decode period: the hardware buffer must hold this long of samples (and whatever a busy host
// delays our thread by). Measured on an H100 (GH100, the default set): a sample takes ~25 KB in
// the counter-data image and fills the hardware buffer at about the same rate, and decoding
// costs our thread tens of microseconds per sample (docs/counters.md, Cost). So both buffers
// are sized by the interval: the image for two decode periods, the hardware buffer for
// kBufferSpan, within limits that keep memory bounded.
constexpr auto kDecodePeriod = std::chrono::milliseconds(20);
constexpr uint64_t kBytesPerSample = 32u << 10;
constexpr uint64_t kBufferSpanNs = 200'000'000;
constexpr uint64_t kMinBufferMb = 4, kMaxBufferMb = 64;

uint64_t hardware_buffer_mb(uint32_t interval_us) {
  uint64_t samples = kBufferSpanNs / (uint64_t{interval_us} * 1000) + 1;
  uint64_t mb = (samples * kBytesPerSample + (1u << 20) - 1) >> 20;
  return std::clamp(mb, kMinBufferMb, kMaxBufferMb);
}

uint32_t image_samples(uint32_t interval_us) {
  uint64_t per_period =
      std::chrono::nanoseconds(kDecodePeriod).count() / (uint64_t{interval_us} * 1000);
  return static_cast<uint32_t>(std::clamp<uint64_t>(2 * per_period + 1, 32, 1024));
}

size_t size_from_env(const char* name, size_t fallback, size_t lo, size_t hi) {
  // Read once at start (never in a callback): benchmarks try other sizes without a rebuild.
  const char* s = std::getenv(name);
  if (s == nullptr || *s == 0) return fallback;
  long v = std::strtol(s, nullptr, 10);
  return v >= static_cast<long>(lo) && v <= static_cast<long>(hi) ? static_cast<size_t>(v)
                                                                  : fallback;
}

// The running sampler and the stats of the last one (lock order: g_last_mu, then its mu_).
std::mutex g_last_mu;
PmRunStats g_last_stats;                     // guarded by g_last_mu
std::atomic<PmSampler*> g_running{nullptr};  // written under g_last_mu

}  // namespace

PmSampler::~PmSampler() {
  if (running_) stop();
}

bool PmSampler::start(const CountersApi& api, RecordProcessor* sink, const CounterConfig& config,
                      std::string& notice, bool& user_error, std::string& why) {
  user_error = false;
  api_ = &api;
  sink_ = sink;
  device_ = 0;
  if (!ensure_profiler_initialized(api, why)) return false;
  std::string chip = chip_name(api, device_, why);
  if (chip.empty()) return false;
  std::vector<uint8_t> availability;
  {
    CUpti_PmSampling_GetCounterAvailability_Params p{};
    p.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
    p.deviceIndex = device_;
    if (api.cuptiPmSamplingGetCounterAvailability(&p) == CUPTI_SUCCESS &&
        p.counterAvailabilityImageSize > 0) {
      availability.assign(p.counterAvailabilityImageSize, 0);
      p.pCounterAvailabilityImage = availability.data();
      if (api.cuptiPmSamplingGetCounterAvailability(&p) != CUPTI_SUCCESS) availability.clear();
    }
  }
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
  for (const std::string& m : metrics_)
    metric_ptrs_.push_back(m.c_str());
  schema_ = CounterSchema(metrics_);

  CUpti_PmSampling_Enable_Params en{};
  en.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
  en.deviceIndex = device_;
  CUptiResult r = api.cuptiPmSamplingEnable(&en);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(api, "cuptiPmSamplingEnable", r);
    return false;
  }
  object_ = en.pPmSamplingObject;
  auto fail = [&](const char* call, CUptiResult result) {
    why = counters_error(api, call, result);
    CUpti_PmSampling_Disable_Params d{};
    d.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
    d.pPmSamplingObject = object_;
    api.cuptiPmSamplingDisable(&d);
    object_ = nullptr;
    return false;
  };
  CUpti_PmSampling_SetConfig_Params set{};
  set.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
  set.pPmSamplingObject = object_;
  set.configSize = config_image_.size();
  set.pConfig = config_image_.data();
  const size_t hw_bytes =
      size_from_env("PROTON_PM_BUFFER_MB", hardware_buffer_mb(config.interval_us), 1, 4096) << 20;
  const uint32_t samples_per_image = static_cast<uint32_t>(
      size_from_env("PROTON_PM_IMAGE_SAMPLES", image_samples(config.interval_us), 16, 1 << 20));
  interval_us_ = config.interval_us;
  set.hardwareBufferSize = hw_bytes;
  set.samplingInterval = uint64_t{config.interval_us} * 1000;  // ns in time-interval mode
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // Keep the latest: with KEEP_OLDEST a buffer that filled once (our thread delayed) made every
  // later decode fail on an H100, ending sampling for the run; now a late decode loses the
  // oldest samples (a gap, counted in overflows) and sampling goes on.
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
  r = api.cuptiPmSamplingSetConfig(&set);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingSetConfig", r);
  CUpti_PmSampling_GetCounterDataSize_Params size{};
  size.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pPmSamplingObject = object_;
  size.pMetricNames = metric_ptrs_.data();
  size.numMetrics = metric_ptrs_.size();
  size.maxSamples = samples_per_image;
  r = api.cuptiPmSamplingGetCounterDataSize(&size);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingGetCounterDataSize", r);
  image_.assign(size.counterDataSize, 0);
  CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pPmSamplingObject = object_;
  init.counterDataSize = image_.size();
  init.pCounterData = image_.data();
  r = api.cuptiPmSamplingCounterDataImageInitialize(&init);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingCounterDataImageInitialize", r);
  CUpti_PmSampling_Start_Params st{};
  st.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
  st.pPmSamplingObject = object_;
  r = api.cuptiPmSamplingStart(&st);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingStart", r);
  notice = "proton: hardware counters on " + chip + " by PM sampling every " +
           std::to_string(config.interval_us) + " us (" + std::to_string(metrics_.size()) +
           " device-wide metrics, one pass, no sync): " +
           (config.range_profiler ? std::string("'pm:' values per kernel and counter tracks")
                                  : std::string("each sample's counts are split over the kernels "
                                                "that ran in it (docs/counters.md)"));
  if (!notes.empty()) notice += " [" + notes + "]";
  {
    std::lock_guard lock(mu_);
    stats_ = Stats{};
    stats_.hardware_buffer = hw_bytes;
    stats_.image_bytes = image_.size();
    stats_.interval_ns = uint64_t{config.interval_us} * 1000;
  }
  quit_ = false;
  running_ = true;
  {
    std::lock_guard last(g_last_mu);
    g_running.store(this, std::memory_order_release);
  }
  thread_ = std::thread([this] { worker(); });
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
  // Decode until the hardware buffer is empty (a decode stops when the image is full).
  for (int round = 0; round < 64; ++round) {
    CUpti_PmSampling_DecodeData_Params d{};
    d.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
    d.pPmSamplingObject = object_;
    d.pCounterDataImage = image_.data();
    d.counterDataImageSize = image_.size();
    if (api_->cuptiPmSamplingDecodeData(&d) != CUPTI_SUCCESS) {
      ++stats_.errors;
      break;
    }
    ++stats_.decodes;
    if (d.overflow) ++stats_.overflows;
    CUpti_PmSampling_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = image_.data();
    info.counterDataImageSize = image_.size();
    if (api_->cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
      ++stats_.errors;
      break;
    }
    CounterSamples batch;
    batch.schema = &schema_;
    batch.device = device_;
    std::vector<double> row(metrics_.size());
    batch.start_ns.reserve(info.numCompletedSamples);
    batch.end_ns.reserve(info.numCompletedSamples);
    batch.values.reserve(info.numCompletedSamples * metrics_.size());
    const uint64_t e0 = steady_ns();
    for (size_t i = 0; i < info.numCompletedSamples; ++i) {
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
    if (sink_ != nullptr && batch.size() > 0) sink_->deliver_counter_samples(batch);
    // The image is reused: re-initialise it for the next decode.
    CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
    init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pPmSamplingObject = object_;
    init.counterDataSize = image_.size();
    init.pCounterData = image_.data();
    api_->cuptiPmSamplingCounterDataImageInitialize(&init);
    if (d.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
  }
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
  CUpti_PmSampling_Stop_Params st{};
  st.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
  st.pPmSamplingObject = object_;
  api_->cuptiPmSamplingStop(&st);
  {
    std::lock_guard lock(mu_);
    decode_once();
  }
  CUpti_PmSampling_Disable_Params d{};
  d.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
  d.pPmSamplingObject = object_;
  api_->cuptiPmSamplingDisable(&d);
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
