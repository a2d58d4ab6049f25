#include "backends/cupti/counter_host.h"

#include <algorithm>

namespace proton::cupti {

CounterHost::~CounterHost() {
  if (host_ != nullptr && api_ != nullptr) {
    CUpti_Profiler_Host_Deinitialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = host_;
    api_->cuptiProfilerHostDeinitialize(&p);
  }
}

bool CounterHost::init(const CountersApi& api, CUpti_ProfilerType type, const std::string& chip,
                       const std::vector<uint8_t>& availability, std::string& why) {
  api_ = &api;
  chip_ = chip;
  type_ = type;
  availability_ = availability;
  CUpti_Profiler_Host_Initialize_Params p{};
  p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  p.profilerType = type;
  p.pChipName = chip_.c_str();
  // Our copy: it lives as long as the host object, in case CUPTI keeps the pointer.
  p.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  CUptiResult r = api.cuptiProfilerHostInitialize(&p);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(api, "cuptiProfilerHostInitialize", r) + " (chip " + chip_ + ")";
    return false;
  }
  host_ = p.pHostObject;
  return true;
}

bool CounterHost::known(const std::string& metric) {
  CUpti_Profiler_Host_GetMetricProperties_Params p{};
  p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
  p.pHostObject = host_;
  p.pMetricName = metric.c_str();
  return api_->cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
}

std::vector<std::string> CounterHost::base_metrics() {
  std::vector<std::string> out;
  for (int t = 0; t < CUPTI_METRIC_TYPE__COUNT; ++t) {
    CUpti_Profiler_Host_GetBaseMetrics_Params p{};
    p.structSize = CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE;
    p.pHostObject = host_;
    p.metricType = static_cast<CUpti_MetricType>(t);
    if (api_->cuptiProfilerHostGetBaseMetrics(&p) != CUPTI_SUCCESS) continue;
    for (size_t i = 0; i < p.numMetrics; ++i) {
      if (p.ppMetricNames[i] != nullptr) out.emplace_back(p.ppMetricNames[i]);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool CounterHost::trial(const std::vector<std::string>& metrics, size_t& passes) {
  // A scratch host object: ConfigAddMetrics accumulates, and a refused name must not spoil the
  // real configuration. Initialising one costs a few milliseconds.
  CounterHost scratch;
  std::string ignored;
  if (!scratch.init(*api_, type_, chip_, availability_, ignored)) return false;
  std::vector<uint8_t> config;
  return scratch.configure(metrics, config, passes, ignored);
}

bool CounterHost::resolve(const std::vector<std::vector<std::string>>& wanted, bool user_named,
                          std::vector<std::string>& out, std::string& notes, std::string& why) {
  out.clear();
  for (const auto& alternatives : wanted) {
    if (alternatives.empty()) continue;
    // Known by name and accepted into a configuration (some names have properties but are
    // refused by ConfigAddMetrics, e.g. the gmma pipe on GH100).
    size_t passes = 0;
    auto hit = std::find_if(alternatives.begin(), alternatives.end(),
                            [&](const std::string& n) { return known(n) && trial({n}, passes); });
    if (hit == alternatives.end()) {
      if (user_named) {
        why = unknown_metric_message(alternatives.front(), chip_, base_metrics());
        why += type_ == CUPTI_PROFILER_TYPE_PM_SAMPLING
                   ? " [PM sampling's metrics (mode=\"counters\"): list_metrics(pm=True)]"
                   : " [the Range Profiler's metrics (range=user|auto): list_metrics()]";
        return false;
      }
      std::string joined;
      for (const std::string& a : alternatives)
        joined += (joined.empty() ? "" : " / ") + a;
      notes += (notes.empty() ? "" : "; ") + ("not on " + chip_ + ": " + joined);
      continue;
    }
    if (!user_named) {
      // The default set stays in one pass on every chip: a metric that would add a pass is
      // left out (and said at start).
      std::vector<std::string> with = out;
      with.push_back(*hit);
      if (!trial(with, passes) || passes > 1) {
        notes +=
            (notes.empty() ? "" : "; ") + (*hit + " left out: it needs another pass on " + chip_);
        continue;
      }
    }
    out.push_back(*hit);
  }
  if (out.empty()) {
    why = "none of the requested metrics exists on " + chip_;
    return false;
  }
  return true;
}

bool CounterHost::configure(const std::vector<std::string>& metrics, std::vector<uint8_t>& config,
                            size_t& passes, std::string& why) {
  configured_ = metrics;
  configured_ptrs_.clear();
  for (const std::string& m : configured_)
    configured_ptrs_.push_back(m.c_str());
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = host_;
  add.ppMetricNames = configured_ptrs_.data();
  add.numMetrics = configured_ptrs_.size();
  CUptiResult r = api_->cuptiProfilerHostConfigAddMetrics(&add);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiProfilerHostConfigAddMetrics", r);
    return false;
  }
  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = host_;
  r = api_->cuptiProfilerHostGetConfigImageSize(&size);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiProfilerHostGetConfigImageSize", r);
    return false;
  }
  config.assign(size.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params image{};
  image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  image.pHostObject = host_;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  r = api_->cuptiProfilerHostGetConfigImage(&image);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiProfilerHostGetConfigImage", r);
    return false;
  }
  CUpti_Profiler_Host_GetNumOfPasses_Params np{};
  np.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  np.configImageSize = config.size();
  np.pConfigImage = config.data();
  r = api_->cuptiProfilerHostGetNumOfPasses(&np);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiProfilerHostGetNumOfPasses", r);
    return false;
  }
  passes = np.numOfPasses;
  return true;
}

bool CounterHost::evaluate(const uint8_t* image, size_t size, size_t index, double* out) {
  CUpti_Profiler_Host_EvaluateToGpuValues_Params p{};
  p.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
  p.pHostObject = host_;
  p.pCounterDataImage = image;
  p.counterDataImageSize = size;
  p.rangeIndex = index;
  p.ppMetricNames = configured_ptrs_.data();
  p.numMetrics = configured_ptrs_.size();
  p.pMetricValues = out;
  return api_->cuptiProfilerHostEvaluateToGpuValues(&p) == CUPTI_SUCCESS;
}

std::string chip_name(const CountersApi& api, size_t index, std::string& why) {
  CUpti_Device_GetChipName_Params p{};
  p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  p.deviceIndex = index;
  CUptiResult r = api.cuptiDeviceGetChipName(&p);
  if (r != CUPTI_SUCCESS || p.pChipName == nullptr) {
    why = counters_error(api, "cuptiDeviceGetChipName", r);
    return {};
  }
  return p.pChipName;
}

std::string unknown_metric_message(const std::string& metric, const std::string& chip,
                                   const std::vector<std::string>& base_metrics) {
  // Suggest the base metrics of the same unit ("dram__", "sm__", ...), then the same stem.
  std::string base = metric.substr(0, metric.find('.'));
  std::string unit = base.substr(0, base.find("__") == std::string::npos ? 0 : base.find("__") + 2);
  std::vector<std::string> close;
  for (const std::string& m : base_metrics) {
    if (m == base || (!unit.empty() && m.rfind(unit, 0) == 0)) close.push_back(m);
  }
  std::string msg = "unknown hardware metric '" + metric + "' for this GPU (" + chip + ")";
  bool base_exists =
      std::find(base_metrics.begin(), base_metrics.end(), base) != base_metrics.end();
  if (base_exists) {
    msg += ": '" + base + "' exists, but not with the suffix '" + metric.substr(base.size()) +
           "' (rollups: .sum .avg .min .max; submetrics such as .pct_of_peak_sustained_elapsed, "
           ".per_second, .pct)";
  }
  const size_t shown = std::min<size_t>(close.size(), 60);
  if (shown > 0) {
    msg += ". Valid " + (unit.empty() ? std::string("metrics") : "'" + unit + "' metrics") + ": ";
    for (size_t i = 0; i < shown; ++i)
      msg += (i ? ", " : "") + close[i];
    if (close.size() > shown) msg += ", ... (" + std::to_string(close.size() - shown) + " more)";
  }
  msg += ". " + std::to_string(base_metrics.size()) +
         " base metrics on this GPU in all; proton.counters.list_metrics() lists them "
         "(append a rollup such as .sum or .avg.pct_of_peak_sustained_elapsed)";
  return msg;
}

}  // namespace proton::cupti

namespace proton::cupti {

bool list_counter_metrics(bool pm, std::string& chip, std::vector<std::string>& out,
                          std::string& why) {
  const DriverApi* driver = load_driver(why);
  if (driver == nullptr) return false;
  if (driver->cuInit(0) != CUDA_SUCCESS) {
    why = "cuInit failed: no usable GPU";
    return false;
  }
  const CuptiApi* cupti = load_cupti(why);
  if (cupti == nullptr) return false;
  const CountersApi* api = load_counters_api(*cupti, why);
  if (api == nullptr || !ensure_profiler_initialized(*api, why)) return false;
  chip = chip_name(*api, 0, why);
  if (chip.empty()) return false;
  CounterHost host;
  if (!host.init(*api, pm ? CUPTI_PROFILER_TYPE_PM_SAMPLING : CUPTI_PROFILER_TYPE_RANGE_PROFILER,
                 chip, {}, why)) {
    return false;
  }
  out = host.base_metrics();
  return true;
}

}  // namespace proton::cupti
