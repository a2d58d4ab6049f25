#include "counters_floor.h"

#include <charconv>
#include <chrono>
#include <memory>

#include "backends/cupti/counter_host.h"
#include "backends/cupti/counters_api.h"
#include "backends/cupti/cupti_api.h"

namespace proton::bench {

namespace {

using namespace proton::cupti;

// Set by start, read by the callback; start/stop come from one Python thread.
struct Floor {
  const CuptiApi* cupti = nullptr;
  const CountersApi* api = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  CUpti_RangeProfiler_Object* object = nullptr;
  CounterHost host;
  std::vector<std::string> metrics;
  std::vector<const char*> ptrs;
  std::vector<uint8_t> config;
  std::vector<uint8_t> image;
  size_t batch = 512;
  size_t in_batch = 0;
  CountersFloorStats stats;
};
Floor* g_floor = nullptr;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool set_config(Floor& f) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pRangeProfilerObject = f.object;
  init.counterDataSize = f.image.size();
  init.pCounterData = f.image.data();
  if (f.api->cuptiRangeProfilerCounterDataImageInitialize(&init) != CUPTI_SUCCESS) return false;
  CUpti_RangeProfiler_SetConfig_Params set{};
  set.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  set.pRangeProfilerObject = f.object;
  set.configSize = f.config.size();
  set.pConfig = f.config.data();
  set.counterDataImageSize = f.image.size();
  set.pCounterDataImage = f.image.data();
  set.range = CUPTI_UserRange;
  set.replayMode = CUPTI_UserReplay;
  set.maxRangesPerPass = f.batch;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.targetNestingLevel = 1;
  if (f.api->cuptiRangeProfilerSetConfig(&set) != CUPTI_SUCCESS) return false;
  CUpti_RangeProfiler_Start_Params st{};
  st.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
  st.pRangeProfilerObject = f.object;
  f.in_batch = 0;
  return f.api->cuptiRangeProfilerStart(&st) == CUPTI_SUCCESS;
}

bool stop_and_decode(Floor& f) {
  CUpti_RangeProfiler_Stop_Params stop{};
  stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
  stop.pRangeProfilerObject = f.object;
  bool ok = f.api->cuptiRangeProfilerStop(&stop) == CUPTI_SUCCESS;
  CUpti_RangeProfiler_DecodeData_Params decode{};
  decode.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
  decode.pRangeProfilerObject = f.object;
  return f.api->cuptiRangeProfilerDecodeData(&decode) == CUPTI_SUCCESS && ok;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  Floor* f = g_floor;
  if (f == nullptr || domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    char name[24];
    auto [end, ec] = std::to_chars(name, name + sizeof(name) - 1, cb->correlationId);
    *end = '\0';
    CUpti_RangeProfiler_PushRange_Params push{};
    push.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
    push.pRangeProfilerObject = f->object;
    push.pRangeName = name;
    if (f->api->cuptiRangeProfilerPushRange(&push) != CUPTI_SUCCESS) ++f->stats.errors;
    return;
  }
  CUpti_RangeProfiler_PopRange_Params pop{};
  pop.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
  pop.pRangeProfilerObject = f->object;
  if (f->api->cuptiRangeProfilerPopRange(&pop) != CUPTI_SUCCESS) ++f->stats.errors;
  ++f->stats.ranges;
  if (++f->in_batch >= f->batch) {
    uint64_t t0 = now_ns();
    if (!stop_and_decode(*f) || !set_config(*f)) ++f->stats.errors;
    ++f->stats.batches;
    f->stats.decode_ns += now_ns() - t0;
  }
}

constexpr CUpti_CallbackId kLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};

}  // namespace

bool counters_floor_start(const std::vector<std::string>& metrics, size_t batch, std::string& why) {
  if (g_floor != nullptr) {
    why = "the counters floor is already running";
    return false;
  }
  auto f = std::make_unique<Floor>();
  f->batch = batch == 0 ? 512 : batch;
  const DriverApi* driver = load_driver(why);
  if (driver == nullptr) return false;
  CUcontext ctx = nullptr;
  if (driver->cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) {
    why = "no current CUDA context (create one first)";
    return false;
  }
  f->cupti = load_cupti(why);
  if (f->cupti == nullptr) return false;
  f->api = load_counters_api(*f->cupti, why);
  if (f->api == nullptr || !ensure_profiler_initialized(*f->api, why)) return false;
  std::string chip = chip_name(*f->api, 0, why);
  if (chip.empty() || !f->host.init(*f->api, CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, {}, why)) {
    return false;
  }
  f->metrics = metrics;
  size_t passes = 0;
  if (!f->host.configure(f->metrics, f->config, passes, why)) return false;
  for (const std::string& m : f->metrics)
    f->ptrs.push_back(m.c_str());
  CUpti_RangeProfiler_Enable_Params en{};
  en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
  en.ctx = ctx;
  CUptiResult r = f->api->cuptiRangeProfilerEnable(&en);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*f->api, "cuptiRangeProfilerEnable", r);
    return false;
  }
  f->object = en.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params size{};
  size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pRangeProfilerObject = f->object;
  size.pMetricNames = f->ptrs.data();
  size.numMetrics = f->ptrs.size();
  size.maxNumOfRanges = f->batch;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(f->batch);
  if (f->api->cuptiRangeProfilerGetCounterDataSize(&size) != CUPTI_SUCCESS) {
    why = "cuptiRangeProfilerGetCounterDataSize failed";
    return false;
  }
  f->image.assign(size.counterDataSize, 0);
  if (!set_config(*f)) {
    why = "cuptiRangeProfilerSetConfig/Start failed";
    return false;
  }
  r = f->cupti->cuptiSubscribe(&f->subscriber, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    why = cupti_error(*f->cupti, "cuptiSubscribe", r);
    return false;
  }
  for (CUpti_CallbackId id : kLaunches)
    f->cupti->cuptiEnableCallback(1, f->subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
  g_floor = f.release();
  return true;
}

CountersFloorStats counters_floor_stop() {
  Floor* f = g_floor;
  if (f == nullptr) return {};
  f->cupti->cuptiUnsubscribe(f->subscriber);
  g_floor = nullptr;
  // Untimed: decode what is left and evaluate range 0, to show the floor measured something.
  if (f->in_batch > 0 && stop_and_decode(*f)) {
    CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = f->image.data();
    info.counterDataImageSize = f->image.size();
    if (f->api->cuptiRangeProfilerGetCounterDataInfo(&info) == CUPTI_SUCCESS) {
      std::vector<double> values(f->metrics.size());
      for (size_t i = 0; i < info.numTotalRanges; ++i) {
        if (f->host.evaluate(f->image.data(), f->image.size(), i, values.data())) {
          if (f->stats.evaluated++ == 0 && !values.empty()) f->stats.first_value = values[0];
        }
      }
    }
  }
  CUpti_RangeProfiler_Disable_Params d{};
  d.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
  d.pRangeProfilerObject = f->object;
  f->api->cuptiRangeProfilerDisable(&d);
  CountersFloorStats s = f->stats;
  delete f;
  return s;
}

}  // namespace proton::bench
