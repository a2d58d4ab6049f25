#include "backends/cupti/cupti_backend.h"

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "attribution/graph_exec_table.h"
#include "attribution/host_call.h"
#include "attribution/record_processor.h"
#include "backends/cupti/cupti_errors.h"
#include "backends/cupti/diagnostics.h"
#include "backends/cupti/graph_callbacks.h"
#include "backends/cupti/host_calls.h"
#include "backends/cupti/launch_callbacks.h"
#include "backends/cupti/nvtx_callbacks.h"
#include "backends/cupti/pc_sampling.h"
#include "backends/cupti/subscriber_hook.h"
#include "common/clock.h"
#include "common/hot.h"

namespace proton {

std::unique_ptr<Backend> make_cupti_backend(std::string& why) {
  (void)why;  // libraries are looked for in start(), where a failure can be explained
  return std::make_unique<cupti::CuptiBackend>();
}

namespace cupti {

namespace {

constexpr const char* kOwner = "profiler";

std::string driver_error(const DriverApi& d, const char* call, CUresult r) {
  const char* text = nullptr;
  if (d.cuGetErrorString(r, &text) != CUDA_SUCCESS) text = nullptr;
  return std::string(call) +
         " failed: " + (text != nullptr ? std::string(text) : "CUDA error " + std::to_string(r));
}

std::atomic<uint64_t> g_periodic_flushes{0};  // relaxed counter (diagnostics)

}  // namespace

CuptiBackend::~CuptiBackend() {
  if (running_) stop();
}

bool CuptiBackend::start(RecordProcessor* sink, const BackendOptions& options, std::string& why) {
  if (running_) return true;
  driver_ = load_driver(why);
  if (driver_ == nullptr) return false;
  CUresult r = driver_->cuInit(0);
  int devices = 0;
  if (r == CUDA_SUCCESS) r = driver_->cuDeviceGetCount(&devices);
  if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && devices == 0)) {
    why = "no CUDA device is visible to this process (check CUDA_VISIBLE_DEVICES)";
    return false;
  }
  if (r != CUDA_SUCCESS) {
    why = driver_error(*driver_, "cuInit", r);
    return false;
  }
  api_ = load_cupti(why, options.cupti_path);
  cupti_finalize_ = options.cupti_finalize;
  if (api_ == nullptr) return false;
  if (!claim_activity(kOwner, why)) return false;
  processor_ = sink;
  uint32_t cupti_version = 0;
  if (api_->cuptiGetVersion(&cupti_version) != CUPTI_SUCCESS) cupti_version = 0;
  batcher_ = std::make_unique<KernelBatcher>(api_->cuptiActivityGetNextRecord,
                                             api_->cuptiActivityGetNumDroppedRecords,
                                             kernel_layout_for(cupti_version));
  if (!subscribe(why)) {
    undo_start();
    return false;
  }
  // Forget drops from before this start (an earlier session or the benchmark floor).
  size_t stale = 0;
  api_->cuptiActivityGetNumDroppedRecords(nullptr, 0, &stale);

  buffer_pool().configure(options.buffer_bytes, options.max_buffers);
  buffer_pool().reserve(options.initial_buffers);
  set_buffer_thread(options.buffer_thread);
  set_buffer_consumer(this);
  CUptiResult cr = api_->cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  if (cr != CUPTI_SUCCESS) {
    why = cupti_error(*api_, "cuptiActivityRegisterCallbacks", cr);
    undo_start();
    return false;
  }
  // Graph resource callbacks stay on from start to stop, paused or not: a graph captured while
  // sessions are paused keeps its capture sites. Without them, graph kernels still land on
  // their launch site, so a failure here is not fatal.
  set_graph_id_api({api_->cuptiGetGraphId, api_->cuptiGetGraphNodeId, api_->cuptiGetGraphExecId});
  // mode="graph" enables GRAPH_TRACE at the first graph made after start, not here: a graph
  // from before start launched first then never meets the trace (graph_callbacks.h).
  // options.graph_trace_eager (PROTON_GRAPH_TRACE_EAGER=1) enables it at start as before (for
  // comparisons on a GPU).
  bool eager_graph_trace = options.graph_level && options.graph_trace_eager;
  set_graph_level(options.graph_level, api_->cuptiActivityDisable,
                  eager_graph_trace ? nullptr : api_->cuptiActivityEnable);
  std::string graph_error;
  set_graph_callbacks(*api_, subscriber_, true, graph_error);
  reset_launch_nesting();
  // Set before the callbacks: a launch tagged with no record coming would be held forever.
  hot::globals.kernel_records_off.store(!options.kernel_records, std::memory_order_relaxed);
  driver_only_ = driver_launch_callbacks_only(*api_, options.launch_callbacks);
  std::string error;
  if (set_launch_callbacks(*api_, subscriber_, true, error, driver_only_) == 0) {
    why = error.empty() ? "CUPTI enabled none of the kernel-launch callbacks" : error;
    undo_start();
    return false;
  }
  // Host calls that block (host_calls.h): their ids only, so launches cost the same. A refusal
  // only loses their times.
  host_calls_ = options.host_calls;
  if (host_calls_) {
    set_host_call_pointer_query(driver_->cuPointerGetAttribute);
    std::string host_error;
    set_host_call_callbacks(*api_, subscriber_, true, host_error);
  }
  // Concurrent-kernel records: the serialising CUPTI_ACTIVITY_KIND_KERNEL would distort the
  // very timings we report.
  cr = options.kernel_records ? api_->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                              : CUPTI_SUCCESS;
  if (cr != CUPTI_SUCCESS) {
    why = cupti_error(*api_, "cuptiActivityEnable(CONCURRENT_KERNEL)", cr);
    undo_start();
    return false;
  }
  if (eager_graph_trace) {
    cr = api_->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    if (cr != CUPTI_SUCCESS) {
      why = cupti_error(*api_, "cuptiActivityEnable(GRAPH_TRACE) for mode='graph'", cr);
      undo_start();
      return false;
    }
  }
  // NVTX push/pop ranges become scopes (nvtx_callbacks.h) unless options.nvtx is off. They
  // stay on while paused, so scopes stay balanced; a refusal only loses the ranges.
  set_nvtx_debug(options.nvtx_debug);
  if (options.nvtx) {
    inject_nvtx(api_->path);
    std::string nvtx_error;
    set_nvtx_callbacks(*api_, subscriber_, true, nvtx_error);
  }
  running_ = true;
  hot::globals.launch_callbacks_on.store(true, std::memory_order_relaxed);
  paused_ = false;
  // CUPTI hands a buffer over when it fills; until then every launch in it keeps its tag in
  // the processor. A plain (non-forcing) flush returns buffers whose records are complete,
  // full or not, and CUPTI allows it from any thread, but it costs the launching threads: the
  // ticker flushes only when the policy says tags pile up (flush_policy.h).
  flush_policy_.tag_limit = options.flush_tags;
  quiet_since_ns_.store(steady_ns(), std::memory_order_relaxed);
  flusher_.start(std::chrono::milliseconds(options.flush_interval_ms),
                 [this] { periodic_flush(); });
  if (options.counters.enabled) start_counters(options.counters, options.local_rank);
  return true;
}

void CuptiBackend::periodic_flush() {
  // Runs on the ticker between start() and stop() (stop joins it before processor_ goes).
  uint64_t now = steady_ns();
  // Asked for (records a consumer awaits), or due by the policy.
  if (!processor_->take_flush_request() &&
      !flush_policy_.due(processor_->held_tags(), now,
                         quiet_since_ns_.load(std::memory_order_relaxed))) {
    return;
  }
  quiet_since_ns_.store(now, std::memory_order_relaxed);
  g_periodic_flushes.fetch_add(1, std::memory_order_relaxed);
  api_->cuptiActivityFlushAll(0);
}

bool CuptiBackend::subscribe(std::string& why) {
  // cuptiSubscribe_v2 (CUDA 12.6+) also tells us who holds CUPTI when we cannot have it.
  char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = {};
  CUptiResult r;
  CUpti_CallbackFunc callback = subscriber_callback();  // on_cupti_callback unless a bench probe
  if (api_->cuptiSubscribe_v2 != nullptr) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "proton";
    params.oldSubscriberName = holder;
    params.oldSubscriberSize = sizeof(holder);
    r = api_->cuptiSubscribe_v2(&subscriber_, callback, nullptr, &params);
  } else {
    r = api_->cuptiSubscribe(&subscriber_, callback, nullptr);
  }
  if (r == CUPTI_SUCCESS) return true;
  subscriber_ = nullptr;
  const char* text = nullptr;
  if (api_->cuptiGetResultString(r, &text) != CUPTI_SUCCESS) text = nullptr;
  holder[sizeof(holder) - 1] = '\0';
  why = describe_cupti_error("cuptiSubscribe", r, text == nullptr ? "" : text, holder);
  return false;
}

void CuptiBackend::undo_start() {
  if (subscriber_ != nullptr) {
    std::string ignored;
    set_launch_callbacks(*api_, subscriber_, false, ignored);
    set_host_call_callbacks(*api_, subscriber_, false, ignored);
    set_graph_callbacks(*api_, subscriber_, false, ignored);
    api_->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    api_->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
    api_->cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
  }
  hot::globals.kernel_records_off.store(false, std::memory_order_relaxed);
  set_graph_level(false);
  set_buffer_consumer(nullptr);
  release_activity(kOwner);
  processor_ = nullptr;
}

void CuptiBackend::pause() {
  if (!running_ || paused_) return;
  // Only the launch callbacks go: kernel activity stays on so records of kernels already
  // launched still arrive. (Disabling a callback id removes CUPTI's dispatch for it entirely,
  // which a flag test inside our callback would not.)
  std::string ignored;
  hot::globals.launch_callbacks_on.store(false, std::memory_order_relaxed);
  set_launch_callbacks(*api_, subscriber_, false, ignored);
  if (host_calls_) set_host_call_callbacks(*api_, subscriber_, false, ignored);
  paused_ = true;
}

void CuptiBackend::resume() {
  if (!running_ || !paused_) return;
  reset_launch_nesting();  // a thread paused between enter and exit must not stay "nested"
  std::string ignored;
  set_launch_callbacks(*api_, subscriber_, true, ignored, driver_only_);
  if (host_calls_) set_host_call_callbacks(*api_, subscriber_, true, ignored);
  paused_ = false;
  hot::globals.launch_callbacks_on.store(true, std::memory_order_relaxed);
}

bool CuptiBackend::enable_kernel_records(std::string& why) {
  if (!running_ || !hot::globals.kernel_records_off.load(std::memory_order_relaxed)) return true;
  CUptiResult cr = api_->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (cr != CUPTI_SUCCESS) {
    why = cupti_error(*api_, "cuptiActivityEnable(CONCURRENT_KERNEL)", cr);
    return false;
  }
  // Records first, tags second: a launch between the two has a record and no tag, and goes to
  // the root of the sessions running (none of them timing kernels yet), never a tag waiting for
  // a record that will not come.
  hot::globals.kernel_records_off.store(false, std::memory_order_relaxed);
  return true;
}

void CuptiBackend::disable_kernel_records() {
  if (!running_ || hot::globals.kernel_records_off.load(std::memory_order_relaxed)) return;
  // Tags first, records second: launches from here on are not tagged, and the flush delivers
  // the records of those that were. (A launch whose thread read the flag just before it went
  // and tags after the flush has no record coming: its tag is held until the backend stops,
  // as a launch that ran no kernel is.)
  hot::globals.kernel_records_off.store(true, std::memory_order_relaxed);
  flush();
  api_->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

void CuptiBackend::sync_current_context() {
  // cuptiActivityFlushAll does not wait for the GPU. Synchronising the calling thread's
  // context (if it has one) makes "flush" mean "every kernel launched so far", as users expect
  // at finalize; kernels of other contexts are delivered only if already complete.
  CUcontext ctx = nullptr;
  if (driver_->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr) {
    ProfilerHostCalls ours;  // not the program's synchronize: not timed
    driver_->cuCtxSynchronize();
  }
}

void CuptiBackend::flush() {
  if (!running_) return;
  flush_counters();
  sync_current_context();
  // A plain flush hands over every buffer whose records are all complete, full or not; the
  // forced one then takes the rest. Records of kernels still running (other contexts) are
  // unreadable in a forced buffer and are lost: the plain flush first keeps that to a minimum.
  api_->cuptiActivityFlushAll(0);
  api_->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  wait_for_deliveries();
  batcher_->report_dropped(*processor_);
  // PC samples after the kernel records: their attribution reads the kernels' time.
  PcSampler::global().drain();
  processor_->settle();
}

void CuptiBackend::stop() {
  if (!running_) return;
  flusher_.stop();     // before anything it flushes is torn down
  stop_pc_sampling();  // its last samples still reach processor_
  hot::globals.launch_callbacks_on.store(false, std::memory_order_relaxed);
  std::string ignored;
  set_launch_callbacks(*api_, subscriber_, false, ignored);
  set_host_call_callbacks(*api_, subscriber_, false, ignored);
  set_graph_callbacks(*api_, subscriber_, false, ignored);
  hot::globals.kernel_records_off.store(false, std::memory_order_relaxed);
  stop_counters();
  sync_current_context();
  api_->cuptiActivityFlushAll(0);
  api_->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  api_->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  api_->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  wait_for_deliveries();
  batcher_->report_dropped(*processor_);
  processor_->settle(/*forget_open_tags=*/true);
  // Unwatched, an executable graph may be destroyed and its handle reused by a new one: the
  // next start must not trust the old fan-outs (node capture sites stay valid: ids are unique).
  GraphExecTable::global().clear();
  set_graph_level(false);
  set_buffer_consumer(nullptr);  // waits for deliveries queued or in progress
  set_nvtx_callbacks(*api_, subscriber_, false, ignored);
  api_->cuptiUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  // cuptiFinalize detaches CUPTI from the driver, so even the cost of its hooks goes away, but
  // it has been seen to crash while other threads launch kernels: opt-in only.
  if (cupti_finalize_) api_->cuptiFinalize();
  release_activity(kOwner);
  processor_ = nullptr;
  running_ = false;
  paused_ = false;
}

void CuptiBackend::consume(uint8_t* buffer, size_t valid_bytes) noexcept {
  if (processor_ == nullptr || batcher_ == nullptr) return;
  quiet_since_ns_.store(steady_ns(), std::memory_order_relaxed);
  try {
    BufferStats s = batcher_->deliver(buffer, valid_bytes, *processor_);
    if (s.end != CUPTI_ERROR_MAX_LIMIT_REACHED) ++incomplete_buffers_;
  } catch (...) {
    // Out of memory while attributing: the buffer is lost, the program goes on.
    ++incomplete_buffers_;
  }
}

bool CuptiBackend::start_pc_sampling(const PcSamplingOptions& options, std::string& why) {
  if (!running_) {
    why = "the CUPTI backend is not running";
    return false;
  }
  if (PcSampler::global().running()) return true;
  if (!set_pc_sampling_callbacks(*api_, subscriber_, true, why)) return false;
  CUdevice dev = 0;
  int sms = 0;
  if (driver_->cuDeviceGet(&dev, 0) == CUDA_SUCCESS) {
    driver_->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  }
  if (!PcSampler::global().start(*api_, *driver_, processor_, options, static_cast<uint32_t>(sms),
                                 why)) {
    std::string ignored;
    set_pc_sampling_callbacks(*api_, subscriber_, false, ignored);
    return false;
  }
  return true;
}

void CuptiBackend::stop_pc_sampling() {
  if (!PcSampler::global().running()) return;
  PcSampler::global().stop();
  std::string ignored;
  set_pc_sampling_callbacks(*api_, subscriber_, false, ignored);
}

uint64_t CuptiBackend::timestamp_ns() {
  uint64_t ts = 0;
  if (api_ != nullptr && api_->cuptiGetTimestamp != nullptr &&
      api_->cuptiGetTimestamp(&ts) == CUPTI_SUCCESS) {
    return ts;
  }
  return Backend::timestamp_ns();  // assume the steady clock (CUPTI's usual Linux source)
}

DeviceInfo CuptiBackend::device(uint32_t id) {
  DeviceInfo info;
  info.type = DeviceType::kCuda;
  info.id = id;
  std::string why;
  if (driver_ == nullptr) driver_ = load_driver(why);
  if (driver_ == nullptr || driver_->cuInit(0) != CUDA_SUCCESS) return info;
  CUdevice dev = 0;
  if (driver_->cuDeviceGet(&dev, static_cast<int>(id)) != CUDA_SUCCESS) return info;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    return driver_->cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS && v > 0 ? v : 0;
  };
  int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  if (major > 0) info.arch = std::to_string(major * 10 + minor);  // 9.0 -> "90", 10.0 -> "100"
  info.num_sms = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
  // CUDA 13 dropped these from cudaDeviceProp, but the driver attributes remain (kHz).
  info.clock_rate = static_cast<uint64_t>(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE));
  info.memory_clock_rate = static_cast<uint64_t>(attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE));
  info.bus_width = static_cast<uint32_t>(attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
  // The SM's limits, for the analyzer's occupancy (docs/advise.md). Read at write time, once
  // per device and file, never per kernel.
  auto u = [&](CUdevice_attribute a) { return static_cast<uint32_t>(attr(a)); };
  info.warp_size = u(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.max_threads_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.max_blocks_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.registers_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.shared_memory_per_sm = u(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.reserved_shared_memory_per_block = u(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  return info;
}

Diagnostics diagnostics() {
  BufferPool::Stats s = buffer_pool().stats();
  Diagnostics d;
  d.buffer_bytes = s.buffer_bytes;
  d.buffers_allocated = s.allocated;
  d.buffers_free = s.free;
  d.buffers_declined = s.declined;
  d.graph_level_fallbacks = graph_level_fallbacks();
  d.graph_trace_enables = graph_trace_enables();
  d.periodic_flushes = g_periodic_flushes.load(std::memory_order_relaxed);
  return d;
}

}  // namespace cupti
}  // namespace proton
