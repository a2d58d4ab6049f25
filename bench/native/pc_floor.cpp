#include "pc_floor.h"

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/cupti/cupti_api.h"
#include "backends/cupti/pc_sampling_setup.h"

namespace proton::bench {

namespace {

constexpr size_t kPcs = 4096;
constexpr size_t kMaxEvents = 4096;

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A context left enabled by a keep_enabled stop, and the buffer CUPTI fills at its disable
// (it must outlive the floor that configured it).
struct Parked {
  CUcontext ctx = nullptr;
  size_t reasons = 0;
  cupti::PcDataBuffer at_disable;
};
Parked g_parked;

struct Floor {
  const cupti::CuptiApi* api = nullptr;
  CUcontext ctx = nullptr;
  bool keep_enabled = false;
  cupti::PcDataBuffer get;
  cupti::PcDataBuffer& at_disable = g_parked.at_disable;
  std::thread thread;
  std::mutex mu;  // guards everything below and the GetData calls
  std::condition_variable cv;
  bool stopping = false;
  bool log = false;
  uint32_t drain_ms = 20;
  Clock::time_point t0;
  PcFloorCounts counts;

  void count(const CUpti_PCSamplingData& d) {
    counts.samples += d.totalSamples;
    counts.pc_records += d.totalNumPcs;
    counts.dropped += d.droppedSamples;
  }

  void drain() {
    for (int round = 0; round < 256; ++round) {
      get.reset();
      CUpti_PCSamplingGetDataParams p{};
      p.size = CUpti_PCSamplingGetDataParamsSize;
      p.ctx = ctx;
      p.pcSamplingData = &get.data;
      ++counts.get_data_calls;
      CUptiResult r = api->cuptiPCSamplingGetData(&p);
      if (log && counts.events.size() < kMaxEvents) {
        counts.events.push_back({ms_since(t0), static_cast<int>(r),
                                 get.data.hardwareBufferFull != 0, get.data.totalSamples,
                                 get.data.totalNumPcs, get.data.remainingNumPcs});
      }
      cupti::PcGetDataOutcome o = cupti::classify_get_data(r, get.data);
      if (r == CUPTI_ERROR_OUT_OF_MEMORY) ++counts.oom_returns;
      if (o == cupti::PcGetDataOutcome::kFailed) {
        ++counts.other_errors;
        return;
      }
      if (r == CUPTI_SUCCESS) count(get.data);
      if (o == cupti::PcGetDataOutcome::kBufferFull) {
        ++counts.buffer_full;
        return;
      }
      if (get.data.remainingNumPcs == 0 || get.data.totalNumPcs == 0) return;
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
  f->log = config.log;
  if (driver->cuCtxGetCurrent(&f->ctx) != CUDA_SUCCESS || f->ctx == nullptr) {
    why = "no current CUDA context (run a CUDA operation first)";
    return false;
  }
  f->keep_enabled = config.keep_enabled && cupti::has_pc_start_stop(*api);
  cupti::PcContinuousSettings s{config.period_log2, config.buffer_bytes, config.scratch_bytes,
                                config.sleep_span_ms, f->keep_enabled};
  f->t0 = Clock::now();
  if (g_parked.ctx != nullptr && g_parked.ctx != f->ctx) {
    cupti::disable_pc_sampling(*api, g_parked.ctx);  // another context's: not ours to resume
    g_parked.ctx = nullptr;
  }
  if (g_parked.ctx != nullptr && f->keep_enabled &&
      cupti::resume_pc_sampling(*api, f->ctx, s) == CUPTI_SUCCESS) {
    f->counts.stall_reasons = static_cast<uint32_t>(g_parked.reasons);
  } else {
    if (g_parked.ctx != nullptr) cupti::disable_pc_sampling(*api, g_parked.ctx);
    g_parked.ctx = nullptr;
    cupti::PcStallReasons reasons;
    if (!cupti::enable_continuous_pc_sampling(*api, f->ctx, s, kPcs, f->at_disable, reasons, why)) {
      return false;
    }
    g_parked.reasons = reasons.names.size();
    f->counts.stall_reasons = static_cast<uint32_t>(reasons.names.size());
  }
  f->counts.enable_ms = ms_since(f->t0);
  f->get.init(kPcs, f->counts.stall_reasons);
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

int pc_floor_set_period(uint32_t period_log2) {
  if (g_floor == nullptr) return static_cast<int>(CUPTI_ERROR_INVALID_OPERATION);
  std::lock_guard lock(g_floor->mu);
  return static_cast<int>(cupti::set_pc_sampling_period(*g_floor->api, g_floor->ctx, period_log2));
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
  if (f->keep_enabled) {
    auto t0 = Clock::now();
    cupti::pause_pc_sampling(*f->api, f->ctx);
    f->drain();  // what CUPTI decoded up to the stop
    f->counts.disable_ms = ms_since(t0);
    g_parked.ctx = f->ctx;
    PcFloorCounts c = std::move(f->counts);
    delete f;
    g_floor = nullptr;
    return c;
  }
  f->at_disable.reset();
  auto t0 = Clock::now();
  CUptiResult r = cupti::disable_pc_sampling(*f->api, f->ctx);
  f->counts.disable_ms = ms_since(t0);
  if (r == CUPTI_SUCCESS) {
    // What CUPTI still held at disable: a short loop's samples may all be here.
    f->count(f->at_disable.data);
    f->counts.samples_at_disable = f->at_disable.data.totalSamples;
    if (f->at_disable.data.hardwareBufferFull) ++f->counts.buffer_full;
  }
  PcFloorCounts c = std::move(f->counts);
  delete f;
  g_floor = nullptr;
  return c;
}

}  // namespace proton::bench
