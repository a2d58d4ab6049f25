#include "backends/cupti/pc_sampling_setup.h"

#include <algorithm>

namespace proton::cupti {

void PcDataBuffer::init(size_t n_pcs, size_t n_reasons) {
  stalls_per_pc = std::max<size_t>(1, n_reasons);
  pcs.assign(n_pcs, CUpti_PCSamplingPCData{});
  stalls.assign(n_pcs * stalls_per_pc, CUpti_PCSamplingStallReason{});
  for (size_t i = 0; i < n_pcs; ++i) {
    pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    pcs[i].stallReason = &stalls[i * stalls_per_pc];
  }
  data = CUpti_PCSamplingData{};
  data.size = sizeof(CUpti_PCSamplingData);
  data.collectNumPcs = n_pcs;
  data.pPcData = pcs.data();
}

void PcDataBuffer::reset() {
  data.totalNumPcs = 0;
  data.remainingNumPcs = 0;
  data.hardwareBufferFull = 0;
  data.droppedSamples = 0;
  data.totalSamples = 0;
  data.nonUsrKernelsTotalSamples = 0;
}

std::string pc_sampling_error(const CuptiApi& api, const char* call, CUptiResult r) {
  std::string s = cupti_error(api, call, r);
  if (r == CUPTI_ERROR_NOT_SUPPORTED) {
    s += " (this GPU or driver has no PC sampling: it needs compute capability 7.0 or newer)";
  } else if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
    s += " (profiling is restricted to admin users: see NVreg_RestrictProfilingToAdminUsers)";
  }
  return s;
}

CUptiResult disable_pc_sampling(const CuptiApi& api, CUcontext ctx) {
  CUpti_PCSamplingDisableParams dp{};
  dp.size = CUpti_PCSamplingDisableParamsSize;
  dp.ctx = ctx;
  return api.cuptiPCSamplingDisable(&dp);
}

namespace {

CUptiResult set_attributes(const CuptiApi& api, CUcontext ctx,
                           CUpti_PCSamplingConfigurationInfo* cfg, size_t n) {
  CUpti_PCSamplingConfigurationInfoParams cp{};
  cp.size = CUpti_PCSamplingConfigurationInfoParamsSize;
  cp.ctx = ctx;
  cp.numAttributes = n;
  cp.pPCSamplingConfigurationInfo = cfg;
  return api.cuptiPCSamplingSetConfigurationAttribute(&cp);
}

// The attributes a session chooses (and a paused context takes anew): the period, the scratch
// and hardware buffers, CUPTI's decode sleep span. Writes kSizeAttributes entries.
constexpr size_t kSizeAttributes = 4;
void size_attributes(const PcContinuousSettings& s, CUpti_PCSamplingConfigurationInfo* cfg) {
  cfg[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  cfg[0].attributeData.samplingPeriodData.samplingPeriod = s.period_log2;
  cfg[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE;
  cfg[1].attributeData.scratchBufferSizeData.scratchBufferSize = s.scratch_bytes;
  cfg[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE;
  cfg[2].attributeData.hardwareBufferSizeData.hardwareBufferSize = s.buffer_bytes;
  cfg[3].attributeType =
      CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN;
  cfg[3].attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
      s.sleep_span_ms;
}

CUptiResult start_collection(const CuptiApi& api, CUcontext ctx) {
  CUpti_PCSamplingStartParams p{};
  p.size = CUpti_PCSamplingStartParamsSize;
  p.ctx = ctx;
  return api.cuptiPCSamplingStart(&p);
}

}  // namespace

CUptiResult set_pc_sampling_period(const CuptiApi& api, CUcontext ctx, uint32_t period_log2) {
  CUpti_PCSamplingConfigurationInfo a{};
  a.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  a.attributeData.samplingPeriodData.samplingPeriod = period_log2;
  return set_attributes(api, ctx, &a, 1);
}

namespace {

// Which attribute CUPTI refused, in words, from the per-attribute status it writes back.
std::string refused_attribute(const std::vector<CUpti_PCSamplingConfigurationInfo>& cfg,
                              const PcContinuousSettings& s) {
  for (const auto& a : cfg) {
    if (a.attributeStatus == CUPTI_SUCCESS) continue;
    switch (a.attributeType) {
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
        return "the interval 2^" + std::to_string(s.period_log2) +
               " cycles was refused (CUPTI takes 2^5 to 2^31)";
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE:
        return "the hardware buffer of " + std::to_string(s.buffer_bytes) + " bytes was refused";
      case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SCRATCH_BUFFER_SIZE:
        return "the scratch buffer of " + std::to_string(s.scratch_bytes) + " bytes was refused";
      default:
        return "attribute " + std::to_string(a.attributeType) + " refused";
    }
  }
  return {};
}

}  // namespace

bool enable_continuous_pc_sampling(const CuptiApi& api, CUcontext ctx,
                                   const PcContinuousSettings& settings, size_t pcs_per_call,
                                   PcDataBuffer& at_disable, PcStallReasons& reasons,
                                   std::string& why) {
  CUpti_PCSamplingEnableParams ep{};
  ep.size = CUpti_PCSamplingEnableParamsSize;
  ep.ctx = ctx;
  CUptiResult r = api.cuptiPCSamplingEnable(&ep);
  if (r != CUPTI_SUCCESS) {
    why = pc_sampling_error(api, "cuptiPCSamplingEnable", r);
    return false;
  }
  auto fail = [&](std::string message) {
    why = std::move(message);
    disable_pc_sampling(api, ctx);
    return false;
  };
  // Every other PC-sampling call needs the context enabled first: Enable creates CUPTI's
  // PC-sampling object for it (asked before, the stall reasons may come back empty).
  size_t n = 0;
  CUpti_PCSamplingGetNumStallReasonsParams np{};
  np.size = CUpti_PCSamplingGetNumStallReasonsParamsSize;
  np.ctx = ctx;
  np.numStallReasons = &n;
  r = api.cuptiPCSamplingGetNumStallReasons(&np);
  if (r != CUPTI_SUCCESS) {
    return fail(pc_sampling_error(api, "cuptiPCSamplingGetNumStallReasons", r));
  }
  if (n == 0 || n > 1024) return fail("CUPTI reports " + std::to_string(n) + " stall reasons");
  reasons.indices.assign(n, 0);
  std::vector<std::vector<char>> storage(n, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
  std::vector<char*> names(n);
  for (size_t i = 0; i < n; ++i)
    names[i] = storage[i].data();
  CUpti_PCSamplingGetStallReasonsParams sp{};
  sp.size = CUpti_PCSamplingGetStallReasonsParamsSize;
  sp.ctx = ctx;
  sp.numStallReasons = n;
  sp.stallReasonIndex = reasons.indices.data();
  sp.stallReasons = names.data();
  r = api.cuptiPCSamplingGetStallReasons(&sp);
  if (r != CUPTI_SUCCESS) return fail(pc_sampling_error(api, "cuptiPCSamplingGetStallReasons", r));
  reasons.names.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    storage[i].back() = '\0';
    reasons.names[i] = storage[i].data();
  }
  at_disable.init(pcs_per_call, n);

  std::vector<CUpti_PCSamplingConfigurationInfo> cfg(kSizeAttributes + 5,
                                                     CUpti_PCSamplingConfigurationInfo{});
  size_attributes(settings, cfg.data());
  CUpti_PCSamplingConfigurationInfo* more = cfg.data() + kSizeAttributes;
  more[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
  more[0].attributeData.stallReasonData.stallReasonCount = n;
  more[0].attributeData.stallReasonData.pStallReasonIndex = reasons.indices.data();
  more[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
  more[1].attributeData.collectionModeData.collectionMode =
      CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  more[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
  more[2].attributeData.enableStartStopControlData.enableStartStopControl =
      settings.start_stop ? 1 : 0;
  more[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
  more[3].attributeData.outputDataFormatData.outputDataFormat =
      CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  // What CUPTI still holds at disable goes here (samples of kernels that ended after the last
  // GetData).
  more[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
  more[4].attributeData.samplingDataBufferData.samplingDataBuffer = &at_disable.data;
  r = set_attributes(api, ctx, cfg.data(), cfg.size());
  if (r != CUPTI_SUCCESS) {
    std::string which = refused_attribute(cfg, settings);
    return fail(pc_sampling_error(api, "cuptiPCSamplingSetConfigurationAttribute", r) +
                (which.empty() ? "" : ": " + which));
  }
  if (settings.start_stop) {
    r = start_collection(api, ctx);
    if (r != CUPTI_SUCCESS) return fail(pc_sampling_error(api, "cuptiPCSamplingStart", r));
  }
  return true;
}

CUptiResult pause_pc_sampling(const CuptiApi& api, CUcontext ctx) {
  CUpti_PCSamplingStopParams p{};
  p.size = CUpti_PCSamplingStopParamsSize;
  p.ctx = ctx;
  return api.cuptiPCSamplingStop(&p);
}

CUptiResult resume_pc_sampling(const CuptiApi& api, CUcontext ctx,
                               const PcContinuousSettings& settings) {
  CUpti_PCSamplingConfigurationInfo cfg[kSizeAttributes]{};
  size_attributes(settings, cfg);
  CUptiResult r = set_attributes(api, ctx, cfg, kSizeAttributes);
  return r != CUPTI_SUCCESS ? r : start_collection(api, ctx);
}

PcGetDataOutcome classify_get_data(CUptiResult result, const CUpti_PCSamplingData& data) {
  if (result == CUPTI_ERROR_OUT_OF_MEMORY) return PcGetDataOutcome::kBufferFull;
  if (result != CUPTI_SUCCESS) return PcGetDataOutcome::kFailed;
  return data.hardwareBufferFull ? PcGetDataOutcome::kBufferFull : PcGetDataOutcome::kData;
}

}  // namespace proton::cupti
