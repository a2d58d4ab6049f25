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
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "backend/launch_stage.h"
#include "backends/cupti/launch_callbacks.h"
#include "common/name_table.h"
#include "context/thread_context.h"

namespace {

using namespace proton;
using Clock = std::chrono::steady_clock;

void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, CUpti_ApiCallbackSite site,
          uint32_t correlation) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = correlation;
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

  done = true;
  drainer.join();
  LaunchStage::drain([&](const LaunchTag&) { drained.fetch_add(1); });
  LaunchStage::active_sessions = 0;
  std::printf(
      "{\"launches\": %llu, \"driver_only_ns\": %.1f, \"runtime_plus_driver_ns\": %.1f, "
      "\"tags_drained\": %llu}\n",
      static_cast<unsigned long long>(n), driver_ns, runtime_ns,
      static_cast<unsigned long long>(drained.load()));
  return 0;
}
