#include "backends/cupti/range_profiler.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "attribution/record_processor.h"
#include "common/clock.h"
#include "common/hot.h"
#include "common/thread_name.h"

namespace proton::cupti {

std::atomic<RangeProfiler*> g_range_profiler{nullptr};

namespace {

// The context whose mutex this thread holds between on_enter and on_exit, and whether a range
// was pushed (a failed push must not pop someone else's range).
thread_local void* tl_held = nullptr;
std::mutex g_last_range_mu;
RangeProfiler::Stats g_last_range_stats;  // guarded by g_last_range_mu
thread_local bool tl_pushed = false;

// Ranges per decode: larger batches sync less often but hold more counter data. 512 ranges of
// the default set are well under a MB of image (CounterConfig::range_batch overrides it).
constexpr size_t kRangeBatch = 512;

}  // namespace

RangeProfiler::~RangeProfiler() {
  if (running_) stop();
}

bool RangeProfiler::start(const CountersApi& api, RecordProcessor* sink,
                          const CounterConfig& config, std::string& notice, bool& user_error,
                          std::string& why) {
  user_error = false;
  api_ = &api;
  sink_ = sink;
  config_ = config;
  if (!ensure_profiler_initialized(api, why)) return false;
  std::string chip = chip_name(api, 0, why);
  if (chip.empty()) return false;
  // The counter availability image tells the host which counters this GPU exposes now (a
  // context is needed; without one, every counter of the chip is assumed available).
  std::vector<uint8_t> availability;
  {
    CUcontext current = nullptr;
    std::string ignored;
    const DriverApi* d = load_driver(ignored);
    if (d != nullptr && d->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current != nullptr) {
      CUpti_Profiler_GetCounterAvailability_Params p{};
      p.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
      p.ctx = current;
      if (api.cuptiProfilerGetCounterAvailability(&p) == CUPTI_SUCCESS &&
          p.counterAvailabilityImageSize > 0) {
        availability.resize(p.counterAvailabilityImageSize);
        p.pCounterAvailabilityImage = availability.data();
        if (api.cuptiProfilerGetCounterAvailability(&p) != CUPTI_SUCCESS) availability.clear();
      }
    }
  }
  if (!host_.init(api, CUPTI_PROFILER_TYPE_RANGE_PROFILER, chip, availability, why)) return false;
  std::string notes;
  if (!host_.resolve(config.metrics, config.user_metrics, metrics_, notes, why)) {
    user_error = true;
    return false;
  }
  size_t passes = 0;
  if (!host_.configure(metrics_, config_image_, passes, why)) {
    user_error = config.user_metrics;
    return false;
  }
  if (passes > 1 && !config.replay) {
    user_error = true;
    why = "these metrics need " + std::to_string(passes) + " passes on " + chip +
          "; counters run in one pass unless you ask for replay: add "
          "':replay' to the mode (kernel replay: every kernel runs " +
          std::to_string(passes) +
          " times, with a context synchronisation per launch), or ask for fewer metrics";
    return false;
  }
  if (config.replay) config_.range = CounterRange::kAuto;  // CUPTI replays only auto ranges
  for (const std::string& m : metrics_)
    metric_ptrs_.push_back(m.c_str());
  schema_ = CounterSchema(metrics_);
  batch_ = config.range_batch != 0 ? config.range_batch : kRangeBatch;
  notice = "proton: hardware counters on " + chip + " by the Range Profiler (" +
           std::to_string(metrics_.size()) + " metrics, " + std::to_string(passes) + " pass" +
           (passes == 1 ? "" : "es") + "): ";
  // The costs are the H100 measurements of docs/counters.md: the API's own (its floor pays the
  // same), so users should hear them before a long run.
  if (config_.range == CounterRange::kUser) {
    notice +=
        "a range around each launch (about 1 ms per launch on an H100: a loop of small "
        "kernels runs ~100x slower; the default mode=\"counters\" samples instead, for a few "
        "percent); kernels running at the same time on other streams count into a range; "
        "launch calls of one context are serialised";
  } else {
    notice +=
        "CUPTI auto ranges: one context synchronisation per kernel launch (kernels "
        "serialised; a 4096^2 GEMM loop ran ~135x slower on an H100)";
    if (passes > 1) {
      notice += ", and kernel replay: every kernel runs " + std::to_string(passes) + " times";
    }
  }
  if (!notes.empty()) notice += " [" + notes + "]";
  quit_ = false;
  thread_ = std::thread([this] {
    name_this_thread("proton-ranges");
    worker();
  });
  running_ = true;
  // Set up the context current on this thread now, off the launch path; others (or this one,
  // if there is none yet) at their first launch.
  CUcontext ctx = nullptr;
  if (api.cupti != nullptr) {
    std::string ignored;
    const DriverApi* d = load_driver(ignored);
    if (d != nullptr && d->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr) {
      if (Context* c = context_for(ctx)) {
        std::lock_guard lock(c->mu);
        std::string error;
        if (!enable(*c, error)) {
          stop();
          why = error;
          return false;
        }
      }
    }
  }
  g_range_profiler.store(this, std::memory_order_release);
  hot::globals.counter_hook.store(this, std::memory_order_release);
  return true;
}

RangeProfiler::Context* RangeProfiler::context_for(CUcontext ctx) noexcept {
  for (Context& c : contexts_) {
    if (c.ctx.load(std::memory_order_acquire) == ctx) return &c;
  }
  std::lock_guard lock(slots_mu_);
  for (Context& c : contexts_) {
    CUcontext cur = c.ctx.load(std::memory_order_acquire);
    if (cur == ctx) return &c;
    if (cur == nullptr) {
      c.ctx.store(ctx, std::memory_order_release);
      return &c;
    }
  }
  return nullptr;  // more contexts than slots: their launches go unmeasured
}

std::unique_ptr<RangeProfiler::Image> RangeProfiler::take_image() {
  std::unique_ptr<Image> img;
  {
    std::lock_guard lock(queue_mu_);
    if (!free_.empty()) {
      img = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!img) img = std::make_unique<Image>();
  img->data.resize(image_bytes_);  // initialised by CUPTI (or overwritten by a copy)
  img->correlations.clear();
  img->correlations.reserve(batch_);
  return img;
}

bool RangeProfiler::enable(Context& c, std::string& why) {
  CUpti_RangeProfiler_Enable_Params en{};
  en.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
  en.ctx = c.ctx.load(std::memory_order_relaxed);
  CUptiResult r = api_->cuptiRangeProfilerEnable(&en);
  if (r != CUPTI_SUCCESS) {
    c.failed = true;
    why = counters_error(*api_, "cuptiRangeProfilerEnable", r);
    return false;
  }
  c.object = en.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params size{};
  size.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pRangeProfilerObject = c.object;
  size.pMetricNames = metric_ptrs_.data();
  size.numMetrics = metric_ptrs_.size();
  size.maxNumOfRanges = batch_;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(batch_);
  r = api_->cuptiRangeProfilerGetCounterDataSize(&size);
  if (r != CUPTI_SUCCESS) {
    c.failed = true;
    why = counters_error(*api_, "cuptiRangeProfilerGetCounterDataSize", r);
    return false;
  }
  image_bytes_ = size.counterDataSize;
  c.image = take_image();
  if (!configure(c, why)) {
    c.failed = true;
    return false;
  }
  return true;
}

bool RangeProfiler::init_image(Context& c, std::string& why) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
  init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  init.pRangeProfilerObject = c.object;
  init.counterDataSize = c.image->data.size();
  init.pCounterData = c.image->data.data();
  CUptiResult r = api_->cuptiRangeProfilerCounterDataImageInitialize(&init);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiRangeProfilerCounterDataImageInitialize", r);
    return false;
  }
  return true;
}

bool RangeProfiler::set_config(Context& c, std::string& why) {
  CUpti_RangeProfiler_SetConfig_Params set{};
  set.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
  set.pRangeProfilerObject = c.object;
  set.configSize = config_image_.size();
  set.pConfig = config_image_.data();
  set.counterDataImageSize = c.image->data.size();
  set.pCounterDataImage = c.image->data.data();
  bool user = config_.range == CounterRange::kUser;
  set.range = user ? CUPTI_UserRange : CUPTI_AutoRange;
  set.replayMode = user ? CUPTI_UserReplay : CUPTI_KernelReplay;
  set.maxRangesPerPass = batch_;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  CUptiResult r = api_->cuptiRangeProfilerSetConfig(&set);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiRangeProfilerSetConfig", r);
    return false;
  }
  return true;
}

bool RangeProfiler::start_ranges(Context& c, std::string& why) {
  CUpti_RangeProfiler_Start_Params start{};
  start.structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE;
  start.pRangeProfilerObject = c.object;
  CUptiResult r = api_->cuptiRangeProfilerStart(&start);
  if (r != CUPTI_SUCCESS) {
    why = counters_error(*api_, "cuptiRangeProfilerStart", r);
    return false;
  }
  c.in_batch = 0;
  return true;
}

bool RangeProfiler::configure(Context& c, std::string& why) {
  return init_image(c, why) && set_config(c, why) && start_ranges(c, why);
}

void RangeProfiler::rotate(Context& c) noexcept {
  if (c.object == nullptr || c.failed) return;
  uint64_t t0 = steady_ns();
  bool ok = true;
  try {
    CUpti_RangeProfiler_Stop_Params stop{};
    stop.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
    stop.pRangeProfilerObject = c.object;
    ok = api_->cuptiRangeProfilerStop(&stop) == CUPTI_SUCCESS;
    CUpti_RangeProfiler_DecodeData_Params decode{};
    decode.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    decode.pRangeProfilerObject = c.object;
    ok = ok && api_->cuptiRangeProfilerDecodeData(&decode) == CUPTI_SUCCESS;
    {
      std::lock_guard lock(stats_mu_);
      stats_.dropped_ranges += decode.numOfRangeDropped;
    }
    if (ok && c.in_batch > 0) {
      // The worker gets a copy; the configured image is re-initialised in place and the
      // profiler restarted on it, so SetConfig runs once per context (a memcpy of the image
      // per batch instead: ~1 us per launch at worst, measured in decode_ns).
      std::unique_ptr<Image> out = take_image();
      std::memcpy(out->data.data(), c.image->data.data(),
                  std::min(out->data.size(), c.image->data.size()));
      out->correlations.swap(c.image->correlations);
      std::lock_guard lock(queue_mu_);
      full_.push_back(std::move(out));
      queue_cv_.notify_one();
    }
    c.image->correlations.clear();
    c.image->correlations.reserve(batch_);
    std::string why;
    // Restart on the same image; if CUPTI wants its configuration again after a decode, give it.
    bool restarted = init_image(c, why) && start_ranges(c, why);
    if (!restarted) restarted = set_config(c, why) && start_ranges(c, why);
    ok = restarted && ok;
    if (!restarted) c.failed = true;  // stays off for this context; kernel timing goes on
  } catch (...) {
    ok = false;
  }
  std::lock_guard lock(stats_mu_);
  stats_.batches += 1;
  stats_.decode_ns += steady_ns() - t0;
  if (!ok) ++stats_.errors;
}

void RangeProfiler::on_enter(CUcontext ctx, uint64_t correlation) noexcept {
  if (tl_held != nullptr) {  // this thread missed an exit (paused mid-launch): let go first
    static_cast<Context*>(tl_held)->mu.unlock();
    tl_held = nullptr;
  }
  Context* c = context_for(ctx);
  if (c == nullptr) return;
  if (!c->mu.try_lock_for(std::chrono::milliseconds(200))) {
    std::lock_guard lock(stats_mu_);
    ++stats_.errors;  // this launch goes unmeasured
    return;
  }
  tl_held = c;
  tl_pushed = false;
  if (c->object == nullptr && !c->failed) {
    std::string ignored;
    try {
      enable(*c, ignored);
    } catch (...) {
      c->failed = true;
    }
  }
  if (c->failed || c->object == nullptr) return;
  if (c->in_batch >= batch_) rotate(*c);
  if (config_.range == CounterRange::kAuto) {
    c->image->correlations.push_back(correlation);  // reserved to batch_: no allocation
    tl_pushed = true;
    return;
  }
  // The range's name is the correlation id: the worker reads it back from the counter data.
  char name[24];
  auto [end, ec] = std::to_chars(name, name + sizeof(name) - 1, correlation);
  *end = '\0';
  CUpti_RangeProfiler_PushRange_Params push{};
  push.structSize = CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE;
  push.pRangeProfilerObject = c->object;
  push.pRangeName = name;
  if (api_->cuptiRangeProfilerPushRange(&push) == CUPTI_SUCCESS) {
    tl_pushed = true;
  } else {
    std::lock_guard lock(stats_mu_);
    ++stats_.errors;
  }
}

void RangeProfiler::on_exit() noexcept {
  auto* c = static_cast<Context*>(tl_held);
  if (c == nullptr) return;
  tl_held = nullptr;
  if (tl_pushed) {
    tl_pushed = false;
    if (config_.range == CounterRange::kUser) {
      CUpti_RangeProfiler_PopRange_Params pop{};
      pop.structSize = CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE;
      pop.pRangeProfilerObject = c->object;
      if (api_->cuptiRangeProfilerPopRange(&pop) != CUPTI_SUCCESS) {
        std::lock_guard lock(stats_mu_);
        ++stats_.errors;
      }
    }
    ++c->in_batch;
    {
      std::lock_guard lock(stats_mu_);
      ++stats_.ranges;
    }
    if (c->in_batch >= batch_) rotate(*c);
  }
  c->mu.unlock();
}

void RangeProfiler::flush() {
  if (!running_) return;
  for (Context& c : contexts_) {
    CUcontext ctx = c.ctx.load(std::memory_order_acquire);
    if (ctx == nullptr) continue;
    std::unique_lock lock(c.mu, std::chrono::seconds(2));
    if (!lock.owns_lock() || c.object == nullptr || c.in_batch == 0) continue;
    // Decode needs the context current on this thread.
    bool pushed = api_->cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
    rotate(c);
    CUcontext ignored = nullptr;
    if (pushed) api_->cuCtxPopCurrent(&ignored);
  }
  std::unique_lock lock(queue_mu_);
  idle_cv_.wait(lock, [&] { return full_.empty() && !busy_; });
}

void RangeProfiler::stop() {
  if (!running_) return;
  hot::globals.counter_hook.store(nullptr, std::memory_order_release);
  g_range_profiler.store(nullptr, std::memory_order_release);
  flush();
  for (Context& c : contexts_) {
    CUcontext ctx = c.ctx.load(std::memory_order_acquire);
    if (ctx == nullptr) continue;
    std::unique_lock lock(c.mu, std::chrono::seconds(2));
    if (c.object != nullptr) {
      bool pushed = api_->cuCtxPushCurrent(ctx) == CUDA_SUCCESS;
      CUpti_RangeProfiler_Stop_Params s{};
      s.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      s.pRangeProfilerObject = c.object;
      api_->cuptiRangeProfilerStop(&s);
      CUpti_RangeProfiler_Disable_Params d{};
      d.structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE;
      d.pRangeProfilerObject = c.object;
      api_->cuptiRangeProfilerDisable(&d);
      CUcontext ignored = nullptr;
      if (pushed) api_->cuCtxPopCurrent(&ignored);
    }
    c.object = nullptr;
    c.image.reset();
    c.failed = false;
    c.in_batch = 0;
    c.ctx.store(nullptr, std::memory_order_release);
  }
  {
    std::lock_guard lock(queue_mu_);
    quit_ = true;
    queue_cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  free_.clear();
  running_ = false;
  std::lock_guard last(g_last_range_mu);
  g_last_range_stats = stats();
}

void RangeProfiler::worker() {
  std::unique_lock lock(queue_mu_);
  for (;;) {
    queue_cv_.wait(lock, [&] { return quit_ || !full_.empty(); });
    if (full_.empty()) {
      if (quit_) return;
      continue;
    }
    std::unique_ptr<Image> img = std::move(full_.front());
    full_.pop_front();
    busy_ = true;
    lock.unlock();
    try {
      evaluate(*img);
    } catch (...) {
      std::lock_guard s(stats_mu_);
      ++stats_.errors;
    }
    lock.lock();
    free_.push_back(std::move(img));
    busy_ = false;
    idle_cv_.notify_all();
  }
}

void RangeProfiler::evaluate(Image& image) {
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
  info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
  info.pCounterDataImage = image.data.data();
  info.counterDataImageSize = image.data.size();
  if (api_->cuptiRangeProfilerGetCounterDataInfo(&info) != CUPTI_SUCCESS) {
    std::lock_guard s(stats_mu_);
    ++stats_.errors;
    return;
  }
  LaunchCounters batch;
  batch.schema = &schema_;
  batch.correlation.reserve(info.numTotalRanges);
  batch.values.reserve(info.numTotalRanges * metrics_.size());
  std::vector<double> row(metrics_.size());
  uint64_t unmatched = 0;
  bool user = config_.range == CounterRange::kUser;
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    uint64_t correlation = 0;
    if (user) {
      CUpti_Profiler_Host_GetRangeName_Params rn{};
      rn.structSize = CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE;
      rn.pCounterDataImage = image.data.data();
      rn.counterDataImageSize = image.data.size();
      rn.rangeIndex = i;
      rn.delimiter = "/";
      if (api_->cuptiProfilerHostGetRangeName(&rn) != CUPTI_SUCCESS || rn.pRangeName == nullptr) {
        ++unmatched;
        continue;
      }
      const char* name = rn.pRangeName;
      const char* end = name + std::strlen(name);
      auto [p, ec] = std::from_chars(name, end, correlation);
      bool parsed = ec == std::errc{} && p == end;
      std::free(const_cast<char*>(rn.pRangeName));  // ours to free (cupti_profiler_host.h)
      if (!parsed) {
        ++unmatched;
        continue;
      }
    } else {
      if (i >= image.correlations.size()) {
        ++unmatched;  // more ranges than launches: graph kernels under auto ranges
        continue;
      }
      correlation = image.correlations[i];
    }
    if (!host_.evaluate(image.data.data(), image.data.size(), i, row.data())) {
      ++unmatched;
      continue;
    }
    batch.correlation.push_back(correlation);
    batch.values.insert(batch.values.end(), row.begin(), row.end());
  }
  {
    std::lock_guard s(stats_mu_);
    stats_.evaluated += batch.size();
    stats_.dropped_ranges += unmatched;
  }
  if (sink_ != nullptr && batch.size() > 0) sink_->deliver(LaunchCounterValues{batch});
}

CounterRunStats counter_run_stats() {
  return RangeProfiler::last_stats();
}

RangeProfiler::Stats RangeProfiler::last_stats() {
  if (RangeProfiler* rp = g_range_profiler.load(std::memory_order_acquire)) return rp->stats();
  std::lock_guard last(g_last_range_mu);
  return g_last_range_stats;
}

RangeProfiler::Stats RangeProfiler::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace proton::cupti
