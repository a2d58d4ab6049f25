#include "backends/cupti/pm_sampling.h"

#include <chrono>

#include "attribution/record_processor.h"

namespace proton::cupti {

namespace {

// Decode period: the hardware buffer must hold this long of samples. At 100 us and the
// default set, 32 MB holds seconds; 20 ms keeps the decoded image small.
constexpr auto kDecodePeriod = std::chrono::milliseconds(20);
constexpr size_t kHardwareBufferBytes = 32u << 20;
constexpr uint32_t kMaxSamplesPerDecode = 4096;

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
  std::vector<std::vector<std::string>> wanted =
      config.user_metrics ? config.metrics : default_sampling_metrics();
  std::string notes;
  if (!host_.resolve(wanted, config.user_metrics, metrics_, notes, why)) {
    user_error = true;
    return false;
  }
  size_t passes = 0;
  if (!host_.configure(metrics_, config_image_, passes, why)) {
    user_error = config.user_metrics;
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
  set.hardwareBufferSize = kHardwareBufferBytes;
  set.samplingInterval = uint64_t{config.interval_us} * 1000;  // ns in time-interval mode
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  r = api.cuptiPmSamplingSetConfig(&set);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingSetConfig", r);
  CUpti_PmSampling_GetCounterDataSize_Params size{};
  size.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pPmSamplingObject = object_;
  size.pMetricNames = metric_ptrs_.data();
  size.numMetrics = metric_ptrs_.size();
  size.maxSamples = kMaxSamplesPerDecode;
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
  notice = "proton: PM sampling on " + chip + " every " + std::to_string(config.interval_us) +
           " us (" + std::to_string(metrics_.size()) +
           " device-wide metrics as counter tracks; no sync)";
  if (!notes.empty()) notice += " [" + notes + "]";
  quit_ = false;
  running_ = true;
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
  // Decode until the hardware buffer is empty (the image holds kMaxSamplesPerDecode samples).
  for (int round = 0; round < 64; ++round) {
    CUpti_PmSampling_DecodeData_Params d{};
    d.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
    d.pPmSamplingObject = object_;
    d.pCounterDataImage = image_.data();
    d.counterDataImageSize = image_.size();
    if (api_->cuptiPmSamplingDecodeData(&d) != CUPTI_SUCCESS) {
      ++stats_.errors;
      return;
    }
    ++stats_.decodes;
    if (d.overflow) ++stats_.overflows;
    CUpti_PmSampling_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = image_.data();
    info.counterDataImageSize = image_.size();
    if (api_->cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
      ++stats_.errors;
      return;
    }
    CounterSamples batch;
    batch.schema = &schema_;
    batch.device = device_;
    std::vector<double> row(metrics_.size());
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
    stats_.samples += batch.size();
    if (sink_ != nullptr && batch.size() > 0) sink_->deliver_counter_samples(batch);
    // The image is reused: re-initialise it for the next decode.
    CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
    init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pPmSamplingObject = object_;
    init.counterDataSize = image_.size();
    init.pCounterData = image_.data();
    api_->cuptiPmSamplingCounterDataImageInitialize(&init);
    if (d.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) return;
  }
}

void PmSampler::flush() {
  if (!running_) return;
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
}

PmSampler::Stats PmSampler::stats() const {
  auto& self = const_cast<PmSampler&>(*this);
  std::lock_guard lock(self.mu_);
  return stats_;
}

}  // namespace proton::cupti
