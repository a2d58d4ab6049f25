#include "callback_probe.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <stdexcept>

#include "common/clock.h"

namespace proton::bench {

namespace {

uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return steady_ns();
#endif
}

struct Counter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> ticks{0};
  void add(uint64_t t) {
    calls.fetch_add(1, std::memory_order_relaxed);
    ticks.fetch_add(t, std::memory_order_relaxed);
  }
};

Counter g_enter, g_exit;
std::atomic<uint64_t> g_probe_ticks{0};  // two back-to-back reads, the fastest of many
uint64_t g_start_ticks = 0, g_start_ns = 0;
std::string g_mode;                     // written by choose_callback, before the profiler starts
CUpti_CallbackFunc g_target = nullptr;  // the product's callback, wrapped by timed_callback

void CUPTIAPI timed_callback(void* userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data) {
  uint64_t t0 = ticks();
  g_target(userdata, domain, cbid, data);
  uint64_t t1 = ticks();
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  bool exit = static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT;
  (exit ? g_exit : g_enter).add(t1 - t0);
}

void CUPTIAPI empty_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

}  // namespace

CUpti_CallbackFunc choose_callback(const std::string& mode, CUpti_CallbackFunc target) {
  if (mode != "timed" && mode != "empty") {
    throw std::invalid_argument("callback probe mode must be 'timed' or 'empty', not '" + mode +
                                "'");
  }
  g_mode = mode;
  g_target = target;
  if (g_mode == "empty") return empty_callback;
  if (target == nullptr) throw std::invalid_argument("the timed probe needs the target callback");
  for (Counter* c : {&g_enter, &g_exit}) {
    c->calls.store(0, std::memory_order_relaxed);
    c->ticks.store(0, std::memory_order_relaxed);
  }
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 1000; ++i) {
    uint64_t t0 = ticks();
    uint64_t t1 = ticks();
    best = std::min(best, t1 - t0);
  }
  g_probe_ticks.store(best, std::memory_order_relaxed);
  g_start_ticks = ticks();
  g_start_ns = steady_ns();
  return timed_callback;
}

CallbackTiming callback_timing() {
  CallbackTiming t;
  t.mode = g_mode;
  if (t.mode != "timed") return t;  // counters of an earlier timed run are not this run's
  uint64_t dt = ticks() - g_start_ticks, dns = steady_ns() - g_start_ns;
  double ns_per_tick = dt != 0 ? static_cast<double>(dns) / static_cast<double>(dt) : 0.0;
  auto mean = [&](const Counter& c, uint64_t& calls) {
    calls = c.calls.load(std::memory_order_relaxed);
    return calls == 0 ? 0.0
                      : static_cast<double>(c.ticks.load(std::memory_order_relaxed)) * ns_per_tick /
                            static_cast<double>(calls);
  };
  t.enter_ns = mean(g_enter, t.enter_calls);
  t.exit_ns = mean(g_exit, t.exit_calls);
  t.probe_ns = static_cast<double>(g_probe_ticks.load(std::memory_order_relaxed)) * ns_per_tick;
  return t;
}

}  // namespace proton::bench
