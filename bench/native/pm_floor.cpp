#include "pm_floor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/cupti/counter_host.h"
#include "backends/cupti/counters_api.h"
#include "backends/cupti/cupti_api.h"

namespace proton::bench {

namespace {

using namespace proton::cupti;

int64_t rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Owned by start/stop (one Python thread) and the decode thread; stats_mu guards the stats.
struct Floor {
  PmFloorConfig config;
  const CountersApi* api = nullptr;
  CUpti_PmSampling_Object* object = nullptr;
  CounterHost host;
  std::vector<const char*> ptrs;
  std::vector<uint8_t> image;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool quit = false;
  PmFloorStats stats;  // guarded by mu

  // Each step also goes to stderr at once, so that a crash inside CUPTI shows where it was.
  void step(const char* name) {
    stats.rss_kb.emplace_back(name, rss_kb());
    std::fprintf(stderr, "pm_floor: %s (VmRSS %lld kB)\n", name,
                 static_cast<long long>(stats.rss_kb.back().second));
    std::fflush(stderr);
  }

  void decode() {  // requires mu
    uint64_t t0 = now_ns();
    std::vector<double> row(config.metrics.size());
    for (int round = 0; round < 64; ++round) {
      CUpti_PmSampling_DecodeData_Params d{};
      d.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
      d.pPmSamplingObject = object;
      d.pCounterDataImage = image.data();
      d.counterDataImageSize = image.size();
      if (api->cuptiPmSamplingDecodeData(&d) != CUPTI_SUCCESS) {
        ++stats.errors;
        break;
      }
      ++stats.decodes;
      if (d.overflow) ++stats.overflows;
      CUpti_PmSampling_GetCounterDataInfo_Params info{};
      info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
      info.pCounterDataImage = image.data();
      info.counterDataImageSize = image.size();
      if (api->cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
        ++stats.errors;
        break;
      }
      uint64_t e0 = now_ns();
      for (size_t i = 0; i < info.numCompletedSamples; ++i) {
        ++stats.samples;
        if (!config.evaluate) continue;
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si{};
        si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
        si.pPmSamplingObject = object;
        si.pCounterDataImage = image.data();
        si.counterDataImageSize = image.size();
        si.sampleIndex = i;
        if (api->cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
            !host.evaluate(image.data(), image.size(), i, row.data())) {
          ++stats.errors;
          continue;
        }
        for (size_t m = 0; m < row.size(); ++m)
          stats.totals[m] += row[m];
        if (stats.kept.size() < config.keep_samples) {
          std::vector<double> k = {static_cast<double>(si.startTimestamp),
                                   static_cast<double>(si.endTimestamp)};
          k.insert(k.end(), row.begin(), row.end());
          stats.kept.push_back(std::move(k));
        }
      }
      stats.evaluate_ns += now_ns() - e0;
      CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
      init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
      init.pPmSamplingObject = object;
      init.counterDataSize = image.size();
      init.pCounterData = image.data();
      api->cuptiPmSamplingCounterDataImageInitialize(&init);
      if (d.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
    }
    stats.decode_ns += now_ns() - t0;
  }

  void worker() {
    std::unique_lock lock(mu);
    while (!quit) {
      cv.wait_for(lock, std::chrono::milliseconds(config.decode_ms), [&] { return quit; });
      if (!quit) decode();
    }
  }
};

Floor* g_floor = nullptr;

}  // namespace

bool pm_floor_start(const PmFloorConfig& config, std::string& why) {
  if (g_floor != nullptr) {
    why = "the PM floor is already running";
    return false;
  }
  auto f = std::make_unique<Floor>();
  f->config = config;
  f->stats.totals.assign(config.metrics.size(), 0.0);
  f->step("before");
  const CuptiApi* cupti = load_cupti(why);
  if (cupti == nullptr) return false;
  f->api = load_counters_api(*cupti, why);
  if (f->api == nullptr || !ensure_profiler_initialized(*f->api, why)) return false;
  f->step("profiler initialised");
  std::string chip = chip_name(*f->api, 0, why);
  if (chip.empty()) return false;
  // The counter availability of the device, as Proton's sampler passes it (without it, the
  // first GPU run of this floor crashed at start).
  std::vector<uint8_t> availability;
  CUpti_PmSampling_GetCounterAvailability_Params av{};
  av.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
  av.deviceIndex = 0;
  if (f->api->cuptiPmSamplingGetCounterAvailability(&av) == CUPTI_SUCCESS &&
      av.counterAvailabilityImageSize > 0) {
    availability.assign(av.counterAvailabilityImageSize, 0);
    av.pCounterAvailabilityImage = availability.data();
    if (f->api->cuptiPmSamplingGetCounterAvailability(&av) != CUPTI_SUCCESS) availability.clear();
  }
  f->step("availability");
  if (!f->host.init(*f->api, CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, availability, why)) {
    return false;
  }
  f->step("host initialised");
  std::vector<uint8_t> config_image;
  size_t passes = 0;
  if (!f->host.configure(config.metrics, config_image, passes, why)) return false;
  f->stats.passes = static_cast<uint32_t>(passes);
  f->step("configured");
  for (const std::string& m : f->config.metrics)
    f->ptrs.push_back(m.c_str());
  CUpti_PmSampling_Enable_Params en{};
  en.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
  en.deviceIndex = 0;
  CUptiResult r = f->api->cuptiPmSamplingEnable(&en);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*f->api, "cuptiPmSamplingEnable", r);
    return false;
  }
  f->object = en.pPmSamplingObject;
  f->step("enabled");
  auto fail = [&](const char* call, CUptiResult result) {
    why = counters_error(*f->api, call, result);
    CUpti_PmSampling_Disable_Params d{};
    d.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
    d.pPmSamplingObject = f->object;
    f->api->cuptiPmSamplingDisable(&d);
    return false;
  };
  CUpti_PmSampling_SetConfig_Params set{};
  set.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
  set.pPmSamplingObject = f->object;
  set.configSize = config_image.size();
  set.pConfig = config_image.data();
  set.hardwareBufferSize = config.hardware_buffer;
  set.samplingInterval = config.interval_ns;
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST;  // as Proton
  r = f->api->cuptiPmSamplingSetConfig(&set);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingSetConfig", r);
  f->step("config set (hardware buffer)");
  CUpti_PmSampling_GetCounterDataSize_Params size{};
  size.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pPmSamplingObject = f->object;
  size.pMetricNames = f->ptrs.data();
  size.numMetrics = f->ptrs.size();
  size.maxSamples = config.image_samples;
  r = f->api->cuptiPmSamplingGetCounterDataSize(&size);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingGetCounterDataSize", r);
  f->image.assign(size.counterDataSize, 0);
  f->stats.image_bytes = size.counterDataSize;
  CUpti_PmSampling_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pPmSamplingObject = f->object;
  init.counterDataSize = f->image.size();
  init.pCounterData = f->image.data();
  r = f->api->cuptiPmSamplingCounterDataImageInitialize(&init);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingCounterDataImageInitialize", r);
  f->step("image initialised");
  CUpti_PmSampling_Start_Params st{};
  st.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
  st.pPmSamplingObject = f->object;
  r = f->api->cuptiPmSamplingStart(&st);
  if (r != CUPTI_SUCCESS) return fail("cuptiPmSamplingStart", r);
  f->step("started");
  Floor* raw = f.release();
  raw->thread = std::thread([raw] { raw->worker(); });
  g_floor = raw;
  return true;
}

PmFloorStats pm_floor_stop() {
  Floor* f = g_floor;
  if (f == nullptr) return {};
  g_floor = nullptr;
  {
    std::lock_guard lock(f->mu);
    f->quit = true;
    f->cv.notify_all();
  }
  f->thread.join();
  CUpti_PmSampling_Stop_Params st{};
  st.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
  st.pPmSamplingObject = f->object;
  f->api->cuptiPmSamplingStop(&st);
  {
    std::lock_guard lock(f->mu);
    f->decode();
    f->step("stopped");
  }
  CUpti_PmSampling_Disable_Params d{};
  d.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
  d.pPmSamplingObject = f->object;
  f->api->cuptiPmSamplingDisable(&d);
  PmFloorStats s = std::move(f->stats);
  delete f;
  return s;
}

}  // namespace proton::bench
