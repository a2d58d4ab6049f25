#include "backends/cupti/cupti_floor.h"

#include <atomic>
#include <mutex>

#include "backends/cupti/activity_buffers.h"
#include "backends/cupti/cupti_api.h"
#include "backends/cupti/cupti_records.h"

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

std::mutex g_mu;                                  // guards the two fields below
const cupti::CuptiApi* g_api = nullptr;           // non-null while started
FloorConsumer* g_consumer = new FloorConsumer();  // leaked: CUPTI may call back during exit

}  // namespace

bool cupti_floor_start(std::string& why, const BackendOptions& options) {
  std::lock_guard lock(g_mu);
  if (g_api != nullptr) return true;
  // Without a driver CUPTI only says CUPTI_ERROR_UNKNOWN; the driver loader says why.
  if (cupti::load_driver(why) == nullptr) return false;
  const cupti::CuptiApi* api = cupti::load_cupti(why);
  if (api == nullptr) return false;
  if (!cupti::claim_activity(kOwner, why)) return false;
  g_consumer->next = api->cuptiActivityGetNextRecord;
  g_consumer->records.store(0, std::memory_order_relaxed);
  cupti::buffer_pool().configure(options.buffer_bytes, options.max_buffers);
  cupti::set_buffer_consumer(g_consumer);
  CUptiResult r =
      api->cuptiActivityRegisterCallbacks(cupti::on_buffer_requested, cupti::on_buffer_completed);
  if (r == CUPTI_SUCCESS) r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    why = cupti::cupti_error(*api, "cupti floor", r);
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
  g_api->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  g_api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cupti::set_buffer_consumer(nullptr);
  cupti::release_activity(kOwner);
  g_api = nullptr;
}

uint64_t cupti_floor_records() {
  return g_consumer->records.load(std::memory_order_relaxed);
}

}  // namespace proton
