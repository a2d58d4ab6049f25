#include "backends/cupti/cupti_floor.h"

#include <atomic>
#include <mutex>

#include "backends/cupti/activity_buffers.h"
#include "backends/cupti/cupti_api.h"
#include "backends/cupti/cupti_records.h"
#include "backends/cupti/launch_callbacks.h"

namespace proton {

namespace {

constexpr const char* kOwner = "benchmark floor";

class FloorConsumer final : public cupti::BufferConsumer {
 public:
  void consume(uint8_t* buffer, size_t valid_bytes) noexcept override {
    size_t n = 0;
    cupti::walk_records(next, buffer, valid_bytes, [&](const CUpti_Activity&) { ++n; });
    records.fetch_add(n, std::memory_order_relaxed);
  }
  cupti::NextRecordFn next = nullptr;  // set before registration, read under its lock
  std::atomic<uint64_t> records{0};
};

// Dispatched by CUPTI for every launch API call (enter and exit) under FloorCallbacks::kLaunch:
// what is left is CUPTI's own cost of building the callback data and calling out.
void CUPTIAPI ignore_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

std::mutex g_mu;                                  // guards the three fields below
const cupti::CuptiApi* g_api = nullptr;           // non-null while started
CUpti_SubscriberHandle g_subscriber = nullptr;    // non-null while kLaunch callbacks are on
FloorConsumer* g_consumer = new FloorConsumer();  // leaked: CUPTI may call back during exit

// Called with g_mu held. CUPTI allows one subscriber per process: the claim on activity
// tracing taken before this keeps the profiler (the other subscriber) out meanwhile.
bool subscribe_launches(const cupti::CuptiApi& api, std::string& why) {
  CUptiResult r = api.cuptiSubscribe(&g_subscriber, ignore_launch, nullptr);
  if (r != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    why = cupti::cupti_error(api, "cuptiSubscribe (cupti floor)", r);
    return false;
  }
  std::string error;
  if (cupti::set_launch_callbacks(api, g_subscriber, true, error) == 0) {
    why = error.empty() ? "CUPTI enabled none of the kernel-launch callbacks" : error;
    return false;
  }
  return true;
}

// Called with g_mu held; safe when nothing was subscribed.
void unsubscribe_launches(const cupti::CuptiApi& api) {
  if (g_subscriber == nullptr) return;
  std::string ignored;
  cupti::set_launch_callbacks(api, g_subscriber, false, ignored);
  api.cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

}  // namespace

bool cupti_floor_start(std::string& why, const BackendOptions& options, FloorCallbacks callbacks) {
  std::lock_guard lock(g_mu);
  if (g_api != nullptr) {
    if ((g_subscriber != nullptr) == (callbacks == FloorCallbacks::kLaunch)) return true;
    why = "the cupti floor is already running with other callbacks; stop it first";
    return false;
  }
  // Without a driver CUPTI only says CUPTI_ERROR_UNKNOWN; the driver loader says why.
  if (cupti::load_driver(why) == nullptr) return false;
  const cupti::CuptiApi* api = cupti::load_cupti(why);
  if (api == nullptr) return false;
  if (!cupti::claim_activity(kOwner, why)) return false;
  if (callbacks == FloorCallbacks::kLaunch && !subscribe_launches(*api, why)) {
    unsubscribe_launches(*api);
    cupti::release_activity(kOwner);
    return false;
  }
  g_consumer->next = api->cuptiActivityGetNextRecord;
  g_consumer->records.store(0, std::memory_order_relaxed);
  cupti::buffer_pool().configure(options.buffer_bytes, options.max_buffers);
  cupti::set_buffer_consumer(g_consumer);
  CUptiResult r =
      api->cuptiActivityRegisterCallbacks(cupti::on_buffer_requested, cupti::on_buffer_completed);
  if (r == CUPTI_SUCCESS) r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r == CUPTI_SUCCESS && options.graph_level) {
    r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  }
  if (r != CUPTI_SUCCESS) {
    api->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    why = cupti::cupti_error(*api, "cupti floor", r);
    unsubscribe_launches(*api);
    cupti::set_buffer_consumer(nullptr);
    cupti::release_activity(kOwner);
    return false;
  }
  g_api = api;
  return true;
}

void cupti_floor_stop() {
  std::lock_guard lock(g_mu);
  if (g_api == nullptr) return;
  // Callbacks first, as the backend does: no launch is dispatched to a subscriber going away.
  unsubscribe_launches(*g_api);
  g_api->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  g_api->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);  // harmless when not enabled
  g_api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cupti::set_buffer_consumer(nullptr);
  cupti::release_activity(kOwner);
  g_api = nullptr;
}

uint64_t cupti_floor_records() {
  return g_consumer->records.load(std::memory_order_relaxed);
}

}  // namespace proton
