// Not a test: the CPU cost of Proton's own part of a kernel launch, free of a GPU host's noise.
//
//   launch_path_bench [launches=10000000]
//
// Calls the launch callback the way CUPTI does (enter, then exit) with one session active, in
// a scope, while another thread drains the staged tags as the record processor does. Prints
// one JSON line: ns per launch for a driver launch alone (what CUDA 13 runs: driver-only
// callbacks) and for a runtime launch with its nested driver call (both domains subscribed).
// CUPTI's own dispatch of the callbacks is not in it: bench/interleave.py measures that on a
// GPU (floor_cb minus floor). Build it optimised: see docs/bench.md.
//
// A tight loop keeps every line our callback touches in L1, which a real launch does not: the
// framework runs microseconds of its own code between launches. "cold_l1_ns" / "cold_l2_ns"
// time one driver launch after walking 64 KiB / 4 MiB of other memory, minus the same walk
// and clock reads with no launch: the cost of the cache lines the launch path touches. Linked
// statically, so thread_locals are cheap here: the extension's dynamic-TLS lookups (which
// common/hot.h avoids) do not show; PROTON_DIAG_CALLBACK=timed measures inside real launches.
// "stream_sync_ns" is what timing a host call adds to it (a runtime cudaStreamSynchronize with
// its nested driver call, docs/advise.md "Host calls"): paid by such calls alone, never by a
// launch.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "attribution/launch_stage.h"
#include "backends/cupti/launch_callbacks.h"
#include "common/name_table.h"
#include "context/thread_context.h"

namespace {

using namespace proton;
using Clock = std::chrono::steady_clock;

void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
          uint32_t correlation, const void* params = nullptr) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = correlation;
  data.functionParams = params;
  cupti::on_launch_api(nullptr, domain, cbid, &data);
}

// ns per launch of `launch(i)` over n launches.
template <typename Fn>
double time_launches(uint64_t n, Fn&& launch) {
  auto t0 = Clock::now();
  for (uint64_t i = 1; i <= n; ++i)
    launch(static_cast<uint32_t>(i));
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() /
         static_cast<double>(n);
}

// Reads `bytes` of a buffer of other data, a line at a time, so what the launch path touched
// is no longer in the nearer caches.
uint64_t evict(const std::vector<uint64_t>& other, size_t bytes) {
  uint64_t sum = 0;
  for (size_t i = 0; i < bytes / sizeof(uint64_t) && i < other.size(); i += 8)
    sum += other[i];
  return sum;
}

// ns of one `launch` after an eviction of `bytes`, net of the eviction and clock reads alone.
template <typename Fn>
double time_cold(uint64_t n, size_t bytes, Fn&& launch) {
  static std::vector<uint64_t> other(size_t{4} << 20 >> 3, 1);
  volatile uint64_t sink = 0;
  auto run = [&](bool with_launch) {
    double total = 0;
    for (uint64_t i = 1; i <= n; ++i) {
      sink = sink + evict(other, bytes);
      auto t0 = Clock::now();
      if (with_launch) launch(static_cast<uint32_t>(i));
      total += std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    }
    return total / static_cast<double>(n);
  };
  double with = run(true);
  return with - run(false);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  constexpr auto kDrv = CUPTI_CB_DOMAIN_DRIVER_API;
  constexpr auto kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
  ThreadContext::set_main_thread();
  ThreadContext::current().enter_scope(NameTable::global().intern("bench"));
  cupti::reset_launch_nesting();
  LaunchStage::active_sessions = 1;

  std::atomic<bool> done{false};
  std::atomic<uint64_t> drained{0};
  std::thread drainer([&] {  // the record processor's side, every millisecond
    while (!done.load(std::memory_order_relaxed)) {
      uint64_t k = 0;
      LaunchStage::drain([&](const LaunchTag&) { ++k; });
      drained.fetch_add(k, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  auto driver = [&](uint32_t id) {
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, id);
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, id);
  };
  auto runtime = [&](uint32_t id) {
    call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_ENTER, id);
    driver(id);
    call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT, id);
  };
  time_launches(n / 10, driver);  // warm up: tag blocks allocated, then recycled
  double driver_ns = time_launches(n, driver);
  double runtime_ns = time_launches(n, runtime);
  double cold_l1_ns = time_cold(n / 50, 64 << 10, driver);
  double cold_l2_ns = time_cold(n / 500, 4 << 20, driver);
  cudaStreamSynchronize_v3020_params rt_sync{nullptr};
  cuStreamSynchronize_params drv_sync{nullptr};
  auto sync = [&](uint32_t id) {
    call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_API_ENTER, id, &rt_sync);
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_API_ENTER, id, &drv_sync);
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_API_EXIT, id, &drv_sync);
    call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, CUPTI_API_EXIT, id, &rt_sync);
  };
  double sync_ns = time_launches(n / 10, sync);

  done = true;
  drainer.join();
  LaunchStage::drain([&](const LaunchTag&) { drained.fetch_add(1); });
  LaunchStage::active_sessions = 0;
  std::printf(
      "{\"launches\": %llu, \"driver_only_ns\": %.1f, \"runtime_plus_driver_ns\": %.1f, "
      "\"cold_l1_ns\": %.1f, \"cold_l2_ns\": %.1f, \"stream_sync_ns\": %.1f, "
      "\"tags_drained\": %llu}\n",
      static_cast<unsigned long long>(n), driver_ns, runtime_ns, cold_l1_ns, cold_l2_ns, sync_ns,
      static_cast<unsigned long long>(drained.load()));
  return 0;
}
