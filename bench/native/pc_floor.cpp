#include "pc_floor.h"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/cupti/cupti_api.h"

namespace proton::bench {

namespace {

constexpr size_t kPcs = 4096;

struct Floor {
  const cupti::CuptiApi* api = nullptr;
  CUcontext ctx = nullptr;
  size_t reasons = 0;
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<CUpti_PCSamplingStallReason> stalls;
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> final_pcs;
  std::vector<CUpti_PCSamplingStallReason> final_stalls;
  CUpti_PCSamplingData final_data{};
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  uint32_t drain_ms = 20;
  PcFloorCounts counts;

  void drain() {
    for (int round = 0; round < 256; ++round) {
      data.totalNumPcs = data.remainingNumPcs = 0;
      data.hardwareBufferFull = 0;
      data.totalSamples = data.droppedSamples = 0;
      CUpti_PCSamplingGetDataParams p{};
      p.size = CUpti_PCSamplingGetDataParamsSize;
      p.ctx = ctx;
      p.pcSamplingData = &data;
      ++counts.get_data_calls;
      if (api->cuptiPCSamplingGetData(&p) != CUPTI_SUCCESS) return;
      counts.samples += data.totalSamples;
      counts.pc_records += data.totalNumPcs;
      counts.dropped += data.droppedSamples;
      if (data.hardwareBufferFull) ++counts.buffer_full;
      if (data.remainingNumPcs == 0 || data.totalNumPcs == 0) return;
    }
  }
};

Floor* g_floor = nullptr;

}  // namespace

bool pc_floor_start(const PcFloorConfig& config, std::string& why) {
  if (g_floor != nullptr) {
    why = "the PC-sampling floor is already running";
    return false;
  }
  const cupti::CuptiApi* api = cupti::load_cupti(why);
  if (api == nullptr) return false;
  const cupti::DriverApi* driver = cupti::load_driver(why);
  if (driver == nullptr) return false;
  if (api->cuptiPCSamplingEnable == nullptr) {
    why = "libcupti has no PC sampling API";
    return false;
  }
  auto f = std::make_unique<Floor>();
  f->api = api;
  f->drain_ms = config.drain_ms;
  if (driver->cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || f->ctx == nullptr) {
    why = "no current CUDA context (run a CUDA operation first)";
    return false;
  }
  CUpti_PCSamplingEnableParams ep{};
  ep.size = CUpti_PCSamplingEnableParamsSize;
  ep.ctx = f->ctx;
  CUptiResult r = api->cuptiPCSamplingEnable(&ep);
  if (r != CUPTI_SUCCESS) {
    why = cupti::cupti_error(*api, "cuptiPCSamplingEnable", r);
    return false;
  }
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np{};
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = f->ctx;
  np.numStallReasons = &n;
  if (api->cuptiPCSamplingGetNumStallReasons(&np) != CUPTI_SUCCESS || n == 0 || n > 1024) {
    why = "cuptiPCSamplingGetNumStallReasons failed";
    CUpti_PCSamplingDisableParams dp{};
    dp.size = CUpti_PCSamplingDisableParamsSize;
    dp.ctx = f->ctx;
    api->cuptiPCSamplingDisable(&dp);
    return false;
  }
  std::vector<uint32_t> indices(n);
  std::vector<std::vector<char>> names(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> name_ptrs(n);
  for (size_t i = 0; i < n; ++i)
    name_ptrs[i] = names[i].data();
  CUpti_PCSamplingGetStallReasonsParams sp{};
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = f->ctx;
  sp.numStallReasons = n;
  sp.stallReasonIndex = indices.data();
  sp.stallReasons = name_ptrs.data();
  api->cuptiPCSamplingGetStallReasons(&sp);
  f->reasons = n;
  f->counts.stall_reasons = static_cast<uint32_t>(n);
  f->pcs.assign(kPcs, CUpti_PCSamplingPCData{});
  f->stalls.assign(kPcs * (n == 0 ? 1 : n), CUpti_PCSamplingStallReason{});
  for (size_t i = 0; i < kPcs; ++i) {
    f->pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    f->pcs[i].stallReason = &f->stalls[i * (n == 0 ? 1 : n)];
  }
  f->data.size = sizeof(CUpti_PCSamplingData);
  f->data.collectNumPcs = kPcs;
  f->data.pPcData = f->pcs.data();
  f->final_pcs = f->pcs;
  f->final_stalls.assign(f->stalls.size(), CUpti_PCSamplingStallReason{});
  for (size_t i = 0; i < kPcs; ++i)
    f->final_pcs[i].stallReason = &f->final_stalls[i * (n == 0 ? 1 : n)];
  f->final_data = f->data;
  f->final_data.pPcData = f->final_pcs.data();

  CUpti_PCSamplingConfigurationInfo cfg[9] = {};
  cfg[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  cfg[0].attributeData.samplingPeriodData.samplingPeriod = config.period_log2;
  cfg[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  cfg[1].attributeData.stallReasonData.stallReasonCount = n;
  cfg[1].attributeData.stallReasonData.pStallReasonIndex = indices.data();
  cfg[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  cfg[2].attributeData.scratchBufferSizeData.scratchBufferSize = config.scratch_bytes;
  cfg[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  cfg[3].attributeData.hardwareBufferSizeData.hardwareBufferSize = config.buffer_bytes;
  cfg[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  cfg[4].attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  cfg[5].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  cfg[5].attributeData.enableStartStopControlData.enableStartStopControl = 0;
  cfg[6].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  cfg[6].attributeData.outputDataFormatData.outputDataFormat =
      CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  cfg[7].attributeType =
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
  cfg[7].attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
      config.sleep_span_ms;
  // Where CUPTI puts what it still holds at disable (the product sets it too).
  cfg[8].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  cfg[8].attributeData.samplingDataBufferData.samplingDataBuffer = &f->final_data;
  CUpti_PCSamplingConfigurationInfoParams cp{};
  cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  cp.ctx = f->ctx;
  cp.numAttributes = 9;
  cp.pPCSamplingConfigurationInfo = cfg;
  r = api->cuptiPCSamplingSetConfigurationAttribute(&cp);
  if (r != CUPTI_SUCCESS) {
    why = cupti::cupti_error(*api, "cuptiPCSamplingSetConfigurationAttribute", r);
    CUpti_PCSamplingDisableParams dp{};
    dp.size = CUpti_PCSamplingDisableParamsSize;
    dp.ctx = f->ctx;
    api->cuptiPCSamplingDisable(&dp);
    return false;
  }
  g_floor = f.release();
  Floor* fl = g_floor;
  fl->thread = std::thread([fl] {
    std::unique_lock lock(fl->mu);
    while (!fl->stopping) {
      fl->cv.wait_for(lock, std::chrono::milliseconds(fl->drain_ms));
      if (fl->stopping) break;
      fl->drain();
      ++fl->counts.drains;
    }
  });
  return true;
}

PcFloorCounts pc_floor_stop() {
  if (g_floor == nullptr) return {};
  Floor* f = g_floor;
  {
    std::lock_guard lock(f->mu);
    f->stopping = true;
  }
  f->cv.notify_all();
  f->thread.join();
  f->drain();
  CUpti_PCSamplingDisableParams dp{};
  dp.size = CUpti_PCSamplingDisableParamsSize;
  dp.ctx = f->ctx;
  f->api->cuptiPCSamplingDisable(&dp);
  PcFloorCounts c = f->counts;
  delete f;
  g_floor = nullptr;
  return c;
}

}  // namespace proton::bench
