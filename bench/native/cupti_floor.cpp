#include "cupti_floor.h"

#include <array>
#include <atomic>
#include <mutex>

#include "backends/cupti/activity_buffers.h"
#include "backends/cupti/cupti_api.h"
#include "backends/cupti/cupti_records.h"
#include "backends/cupti/launch_callbacks.h"
#include "common/ticker.h"

namespace proton {

namespace {

constexpr const char* kOwner = "benchmark floor";
constexpr uint64_t kExternalId = 1;

// FloorConfig::count: which correlation ids each domain's callbacks saw, as bits indexed by
// the id modulo the table size (a kernel is checked long before its id's bit is reused).
class CorrelationBits {
 public:
  void set(uint64_t id) noexcept { words_[slot(id)].fetch_or(bit(id), std::memory_order_relaxed); }
  bool test(uint64_t id) const noexcept {
    return (words_[slot(id)].load(std::memory_order_relaxed) & bit(id)) != 0;
  }
  void clear() noexcept {
    for (auto& w : words_)
      w.store(0, std::memory_order_relaxed);
  }

 private:
  static constexpr size_t kWords = 1u << 14;  // 2^20 ids
  static size_t slot(uint64_t id) { return (id >> 6) & (kWords - 1); }
  static uint64_t bit(uint64_t id) { return uint64_t{1} << (id & 63); }
  std::array<std::atomic<uint64_t>, kWords> words_{};
};

struct Counters {
  std::atomic<uint64_t> records{0}, kernels{0}, api_records{0}, external_records{0};
  std::atomic<uint64_t> runtime_callbacks{0}, driver_callbacks{0};
  std::atomic<uint64_t> kernels_runtime_id{0}, kernels_driver_id{0};
  CorrelationBits runtime_ids, driver_ids;
  bool count = false;  // set before registration

  void reset(bool counting) {
    for (auto* c : {&records, &kernels, &api_records, &external_records, &runtime_callbacks,
                    &driver_callbacks, &kernels_runtime_id, &kernels_driver_id})
      c->store(0, std::memory_order_relaxed);
    runtime_ids.clear();
    driver_ids.clear();
    count = counting;
  }
};

class FloorConsumer final : public cupti::BufferConsumer {
 public:
  void consume(uint8_t* buffer, size_t valid_bytes) noexcept override {
    uint64_t n = 0, kernels = 0, api = 0, external = 0, by_runtime = 0, by_driver = 0;
    cupti::walk_records(next, buffer, valid_bytes, [&](const CUpti_Activity& r) {
      ++n;
      switch (r.kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
          ++kernels;
          if (!counters.count) break;
          uint32_t id = reinterpret_cast<const CUpti_ActivityKernel10&>(r).correlationId;
          by_runtime += counters.runtime_ids.test(id) ? 1 : 0;
          by_driver += counters.driver_ids.test(id) ? 1 : 0;
          break;
        }
        case CUPTI_ACTIVITY_KIND_RUNTIME:
        case CUPTI_ACTIVITY_KIND_DRIVER:
          ++api;
          break;
        case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
          ++external;
          break;
        default:
          break;
      }
    });
    counters.records.fetch_add(n, std::memory_order_relaxed);
    counters.kernels.fetch_add(kernels, std::memory_order_relaxed);
    counters.api_records.fetch_add(api, std::memory_order_relaxed);
    counters.external_records.fetch_add(external, std::memory_order_relaxed);
    counters.kernels_runtime_id.fetch_add(by_runtime, std::memory_order_relaxed);
    counters.kernels_driver_id.fetch_add(by_driver, std::memory_order_relaxed);
  }
  cupti::NextRecordFn next = nullptr;  // set before registration, read under its lock
  Counters counters;
};

FloorConsumer* g_consumer = new FloorConsumer();  // leaked: CUPTI may call back during exit

// Dispatched by CUPTI for every launch API call (enter and exit): what is left is CUPTI's own
// cost of building the callback data and calling out.
void CUPTIAPI ignore_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void CUPTIAPI count_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  Counters& c = g_consumer->counters;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    c.runtime_callbacks.fetch_add(1, std::memory_order_relaxed);
    c.runtime_ids.set(cb->correlationId);
  } else {
    c.driver_callbacks.fetch_add(1, std::memory_order_relaxed);
    c.driver_ids.set(cb->correlationId);
  }
}

bool in_set(LaunchSet set, CUpti_CallbackDomain domain) {
  switch (set) {
    case LaunchSet::kNone:
    case LaunchSet::kProfiler:  // resolved by the backend's own choice instead
      return false;
    case LaunchSet::kAll:
      return true;
    case LaunchSet::kRuntime:
      return domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    case LaunchSet::kDriver:
      return domain == CUPTI_CB_DOMAIN_DRIVER_API;
  }
  return false;
}

std::mutex g_mu;                                // guards the fields below
const cupti::CuptiApi* g_api = nullptr;         // non-null while started
CUpti_SubscriberHandle g_subscriber = nullptr;  // non-null while callbacks are on
FloorConfig g_config;                           // of the running floor
Ticker* g_flusher = new Ticker();               // leaked, like the consumer: used until exit

// Called with g_mu held. CUPTI allows one subscriber per process: the claim on activity
// tracing taken before this keeps the profiler (the other subscriber) out meanwhile.
bool subscribe_launches(const cupti::CuptiApi& api, const FloorConfig& config, std::string& why) {
  CUptiResult r =
      api.cuptiSubscribe(&g_subscriber, config.count ? count_launch : ignore_launch, nullptr);
  if (r != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    why = cupti::cupti_error(api, "cuptiSubscribe (cupti floor)", r);
    return false;
  }
  int done = 0;
  if (config.callbacks == LaunchSet::kAll || config.callbacks == LaunchSet::kProfiler) {
    // The backend's own enabling, with its choice of domains for kProfiler.
    bool driver_only =
        config.callbacks == LaunchSet::kProfiler &&
        cupti::driver_launch_callbacks_only(api, BackendOptions::LaunchCallbacks::kAuto);
    std::string error;
    done = cupti::set_launch_callbacks(api, g_subscriber, true, error, driver_only);
  } else {
    for (const cupti::LaunchCallback& c : cupti::launch_callbacks()) {
      if (in_set(config.callbacks, c.domain) &&
          api.cuptiEnableCallback(1, g_subscriber, c.domain, c.cbid) == CUPTI_SUCCESS) {
        ++done;
      }
    }
  }
  if (done == 0) why = "CUPTI enabled none of the kernel-launch callbacks";
  return done != 0;
}

// Called with g_mu held; safe when nothing was subscribed. Unsubscribing drops every
// callback the subscriber had.
void unsubscribe_launches(const cupti::CuptiApi& api) {
  if (g_subscriber == nullptr) return;
  api.cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

// Turns the activity records of the launch APIs in `set` on or off, one id at a time.
CUptiResult set_api_records(const cupti::CuptiApi& api, LaunchSet set, bool on) {
  if (set == LaunchSet::kNone) return CUPTI_SUCCESS;
  if (set == LaunchSet::kProfiler) set = LaunchSet::kAll;
  if (api.cuptiActivityEnableRuntimeApi == nullptr || api.cuptiActivityEnableDriverApi == nullptr)
    return CUPTI_ERROR_NOT_SUPPORTED;
  for (const cupti::LaunchCallback& c : cupti::launch_callbacks()) {
    if (!in_set(set, c.domain)) continue;
    if (c.domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
      api.cuptiActivityEnableRuntimeApi(c.cbid, on ? 1 : 0);
    } else {
      api.cuptiActivityEnableDriverApi(c.cbid, on ? 1 : 0);
    }
  }
  return CUPTI_SUCCESS;
}

CUptiResult set_external(const cupti::CuptiApi& api, bool on) {
  if (api.cuptiActivityPushExternalCorrelationId == nullptr ||
      api.cuptiActivityPopExternalCorrelationId == nullptr)
    return CUPTI_ERROR_NOT_SUPPORTED;
  if (!on) {
    api.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, nullptr);
    return api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  }
  CUptiResult r = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (r != CUPTI_SUCCESS) return r;
  return api.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                    kExternalId);
}

// Called with g_mu held: everything start may have turned on, in reverse.
void disable_all(const cupti::CuptiApi& api, const FloorConfig& config) {
  unsubscribe_launches(api);
  api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);  // harmless when not enabled
  set_api_records(api, config.api_records, false);
  if (config.external) set_external(api, false);
}

}  // namespace

bool cupti_floor_start(std::string& why, const BackendOptions& options, FloorConfig config) {
  std::lock_guard lock(g_mu);
  if (g_api != nullptr) {
    if (g_config == config) return true;
    why = "the cupti floor is already running with another configuration; stop it first";
    return false;
  }
  // Without a driver CUPTI only says CUPTI_ERROR_UNKNOWN; the driver loader says why.
  if (cupti::load_driver(why) == nullptr) return false;
  const cupti::CuptiApi* api = cupti::load_cupti(why);
  if (api == nullptr) return false;
  if (!cupti::claim_activity(kOwner, why)) return false;
  g_consumer->counters.reset(config.count);
  if (config.callbacks != LaunchSet::kNone && !subscribe_launches(*api, config, why)) {
    unsubscribe_launches(*api);
    cupti::release_activity(kOwner);
    return false;
  }
  g_consumer->next = api->cuptiActivityGetNextRecord;
  cupti::buffer_pool().configure(options.buffer_bytes, options.max_buffers);
  cupti::buffer_pool().reserve(options.initial_buffers);  // as the backend does
  cupti::set_buffer_thread(options.buffer_thread);        // as the backend delivers
  cupti::set_buffer_consumer(g_consumer);
  CUptiResult r =
      api->cuptiActivityRegisterCallbacks(cupti::on_buffer_requested, cupti::on_buffer_completed);
  if (r == CUPTI_SUCCESS && config.kernels) {
    r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  }
  if (r == CUPTI_SUCCESS && options.graph_level) {
    r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  }
  if (r == CUPTI_SUCCESS) r = set_api_records(*api, config.api_records, true);
  if (r == CUPTI_SUCCESS && config.external) r = set_external(*api, true);
  if (r != CUPTI_SUCCESS) {
    why = cupti::cupti_error(*api, "cupti floor", r);
    disable_all(*api, config);
    cupti::set_buffer_consumer(nullptr);
    cupti::release_activity(kOwner);
    return false;
  }
  g_api = api;
  g_config = config;
  if (config.flush_ms > 0) {
    g_flusher->start(std::chrono::milliseconds(config.flush_ms),
                     [api] { api->cuptiActivityFlushAll(0); });
  }
  return true;
}

void cupti_floor_stop() {
  std::lock_guard lock(g_mu);
  if (g_api == nullptr) return;
  g_flusher->stop();
  // Callbacks first, as the backend does: no launch is dispatched to a subscriber going away.
  disable_all(*g_api, g_config);
  g_api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cupti::set_buffer_consumer(nullptr);
  cupti::release_activity(kOwner);
  g_api = nullptr;
}

FloorCounts cupti_floor_counts() {
  const Counters& c = g_consumer->counters;
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  return FloorCounts{get(c.records),
                     get(c.kernels),
                     get(c.api_records),
                     get(c.external_records),
                     get(c.runtime_callbacks),
                     get(c.driver_callbacks),
                     get(c.kernels_runtime_id),
                     get(c.kernels_driver_id)};
}

uint64_t cupti_floor_records() {
  return g_consumer->counters.records.load(std::memory_order_relaxed);
}

}  // namespace proton
