#include "backends/cupti/pm_sampling_setup.h"

#include <algorithm>
#include <cstdlib>

namespace proton::cupti {

namespace {

// Measured on an H100 (GH100, the default set): a sample takes ~25 KB in the counter-data image
// and fills the hardware buffer at about the same rate (docs/counters.md, Cost). Both buffers are
// sized by the interval, within limits that keep memory bounded.
constexpr uint64_t kBytesPerSample = 32u << 10;
constexpr uint64_t kBufferSpanNs = 200'000'000;
constexpr uint64_t kMinBufferMb = 4, kMaxBufferMb = 64;

uint64_t hardware_buffer_mb(uint32_t interval_us) {
  uint64_t samples = kBufferSpanNs / (uint64_t{interval_us} * 1000) + 1;
  uint64_t mb = (samples * kBytesPerSample + (1u << 20) - 1) >> 20;
  return std::clamp(mb, kMinBufferMb, kMaxBufferMb);
}

uint32_t image_samples(uint32_t interval_us) {
  uint64_t per_period = uint64_t{kPmDecodePeriodMs} * 1'000'000 / (uint64_t{interval_us} * 1000);
  return static_cast<uint32_t>(std::clamp<uint64_t>(2 * per_period + 1, 32, 1024));
}

}  // namespace

PmSizes pm_sizes(uint32_t interval_us, uint32_t buffer_mb, uint32_t samples) {
  interval_us = std::max<uint32_t>(interval_us, 1);
  PmSizes s;
  s.interval_us = interval_us;
  s.hardware_buffer_bytes = uint64_t{buffer_mb != 0 ? buffer_mb : hardware_buffer_mb(interval_us)}
                            << 20;
  s.image_samples = samples != 0 ? samples : image_samples(interval_us);
  return s;
}

uint32_t pm_device_for(int context_device, int local_rank, int device_count) {
  if (context_device >= 0) return static_cast<uint32_t>(context_device);
  if (local_rank >= 0 && local_rank < device_count) return static_cast<uint32_t>(local_rank);
  return 0;
}

uint32_t pm_device(const CountersApi& api, int local_rank) {
  int context_device = -1;
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  if (api.cuCtxGetCurrent != nullptr && api.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS &&
      ctx != nullptr && api.cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
    context_device = static_cast<int>(dev);
  }
  int count = 0;
  if (api.cuDeviceGetCount == nullptr || api.cuDeviceGetCount(&count) != CUDA_SUCCESS) count = 0;
  if (const char* s = std::getenv("LOCAL_RANK"); local_rank < 0 && s != nullptr && *s != 0) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end != nullptr && *end == 0 && v >= 0 && v < 1 << 16) local_rank = static_cast<int>(v);
  }
  return pm_device_for(context_device, local_rank, count);
}

std::vector<uint8_t> pm_counter_availability(const CountersApi& api, uint32_t device) {
  std::vector<uint8_t> availability;
  CUpti_PmSampling_GetCounterAvailability_Params p{};
  p.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
  p.deviceIndex = device;
  if (api.cuptiPmSamplingGetCounterAvailability(&p) == CUPTI_SUCCESS &&
      p.counterAvailabilityImageSize > 0) {
    availability.assign(p.counterAvailabilityImageSize, 0);
    p.pCounterAvailabilityImage = availability.data();
    if (api.cuptiPmSamplingGetCounterAvailability(&p) != CUPTI_SUCCESS) availability.clear();
  }
  return availability;
}

CUpti_PmSampling_Object* pm_sampling_begin(const CountersApi& api, uint32_t device,
                                           const std::vector<uint8_t>& config_image,
                                           const std::vector<const char*>& names,
                                           const PmSizes& sizes, std::vector<uint8_t>& image,
                                           std::string& why) {
  CUpti_PmSampling_Enable_Params en{};
  en.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
  en.deviceIndex = device;
  CUptiResult r = api.cuptiPmSamplingEnable(&en);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(api, "cuptiPmSamplingEnable", r);
    return nullptr;
  }
  CUpti_PmSampling_Object* object = en.pPmSamplingObject;
  auto fail = [&](const char* call, CUptiResult result) -> CUpti_PmSampling_Object* {
    why = counters_error(api, call, result);
    pm_sampling_end(api, object);
    return nullptr;
  };
  CUpti_PmSampling_SetConfig_Params set{};
  set.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
  set.pPmSamplingObject = object;
  set.configSize = config_image.size();
  set.pConfig = config_image.data();
  set.hardwareBufferSize = sizes.hardware_buffer_bytes;
  set.samplingInterval = uint64_t{sizes.interval_us} * 1000;  // ns in time-interval mode
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // Keep the latest: with KEEP_OLDEST a buffer that filled once (our thread delayed) made every
  // later decode fail on an H100, ending sampling for the run; now a late decode loses the
  // oldest samples (a gap, counted in overflows) and sampling goes on.
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;
  r = api.cuptiPmSamplingSetConfig(&set);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingSetConfig", r);
  CUpti_PmSampling_GetCounterDataSize_Params size{};
  size.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pPmSamplingObject = object;
  size.pMetricNames = const_cast<const char**>(names.data());
  size.numMetrics = names.size();
  size.maxSamples = sizes.image_samples;
  r = api.cuptiPmSamplingGetCounterDataSize(&size);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingGetCounterDataSize", r);
  image.assign(size.counterDataSize, 0);
  r = pm_reset_image(api, object, image);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingCounterDataImageInitialize", r);
  CUpti_PmSampling_Start_Params st{};
  st.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
  st.pPmSamplingObject = object;
  r = api.cuptiPmSamplingStart(&st);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingStart", r);
  return object;
}

void pm_sampling_stop(const CountersApi& api, CUpti_PmSampling_Object* object) {
  CUpti_PmSampling_Stop_Params st{};
  st.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
  st.pPmSamplingObject = object;
  api.cuptiPmSamplingStop(&st);
}

void pm_sampling_end(const CountersApi& api, CUpti_PmSampling_Object* object) {
  CUpti_PmSampling_Disable_Params d{};
  d.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
  d.pPmSamplingObject = object;
  api.cuptiPmSamplingDisable(&d);
}

bool pm_decode_step(const CountersApi& api, CUpti_PmSampling_Object* object,
                    std::vector<uint8_t>& image, PmDecodeCounts& counts, size_t& completed,
                    bool& image_full) {
  CUpti_PmSampling_DecodeData_Params d{};
  d.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
  d.pPmSamplingObject = object;
  d.pCounterDataImage = image.data();
  d.counterDataImageSize = image.size();
  if (api.cuptiPmSamplingDecodeData(&d) != CUPTI_SUCCESS) {
    ++counts.errors;
    return false;
  }
  ++counts.decodes;
  if (d.overflow) ++counts.overflows;
  CUpti_PmSampling_GetCounterDataInfo_Params info{};
  info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = image.data();
  info.counterDataImageSize = image.size();
  if (api.cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
    ++counts.errors;
    return false;
  }
  completed = info.numCompletedSamples;
  image_full = d.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL;
  return true;
}

CUptiResult pm_reset_image(const CountersApi& api, CUpti_PmSampling_Object* object,
                           std::vector<uint8_t>& image) {
  CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pPmSamplingObject = object;
  init.counterDataSize = image.size();
  init.pCounterData = image.data();
  return api.cuptiPmSamplingCounterDataImageInitialize(&init);
}

}  // namespace proton::cupti
