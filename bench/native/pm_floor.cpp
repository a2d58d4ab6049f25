#include "pm_floor.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/cupti/counter_host.h"
#include "backends/cupti/counters_api.h"
#include "backends/cupti/cupti_api.h"
#include "backends/cupti/pm_sampling_setup.h"
#include "data/counter_config.h"

namespace proton::bench {

namespace {

using namespace proton::cupti;

int64_t rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Owned by start/stop (one Python thread) and the decode thread; stats_mu guards the stats.
struct Floor {
  PmFloorConfig config;
  std::vector<std::string> metrics;  // as given, or ours (CounterHost::resolve of the default)
  const CountersApi* api = nullptr;
  CUpti_PmSampling_Object* object = nullptr;
  CounterHost host;
  std::vector<const char*> ptrs;
  // CUPTI keeps the configuration image it was given at SetConfig and reads it at every decode
  // (a local copy freed after start crashed the first decode inside libnvperf_host).
  std::vector<uint8_t> config_image;
  std::vector<uint8_t> image;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool quit = false;
  PmFloorStats stats;  // guarded by mu

  // Each step also goes to stderr at once, so that a crash inside CUPTI shows where it was.
  void step(const char* name) {
    stats.rss_kb.emplace_back(name, rss_kb());
    std::fprintf(stderr, "pm_floor: %s (VmRSS %lld kB)\n", name,
                 static_cast<long long>(stats.rss_kb.back().second));
    std::fflush(stderr);
  }

  void decode() {  // requires mu
    uint64_t t0 = now_ns();
    std::vector<double> row(metrics.size());
    PmDecodeCounts counts;
    // PM_FLOOR_TRACE=1: each call of the first decodes on stderr (where a crash inside CUPTI is).
    static const bool trace = std::getenv("PM_FLOOR_TRACE") != nullptr;
    const bool say = trace && stats.decodes < 2;
    if (say) std::fprintf(stderr, "pm_floor: decode %llu\n", (unsigned long long)stats.decodes);
    pm_decode(*api, object, image, counts, [&](size_t completed) {
      uint64_t e0 = now_ns();
      if (say) std::fprintf(stderr, "pm_floor: image with %zu samples\n", completed);
      for (size_t i = 0; i < completed; ++i) {
        ++stats.samples;
        if (!config.evaluate) continue;
        if (say && i < 2) std::fprintf(stderr, "pm_floor: sample %zu: info, evaluate\n", i);
        CUpti_PmSampling_CounterData_GetSampleInfo_Params si{};
        si.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
        si.pPmSamplingObject = object;
        si.pCounterDataImage = image.data();
        si.counterDataImageSize = image.size();
        si.sampleIndex = i;
        if (api->cuptiPmSamplingCounterDataGetSampleInfo(&si) != CUPTI_SUCCESS ||
            !host.evaluate(image.data(), image.size(), i, row.data())) {
          ++stats.errors;
          continue;
        }
        for (size_t m = 0; m < row.size(); ++m)
          stats.totals[m] += row[m];
        if (stats.kept.size() < config.keep_samples) {
          std::vector<double> k = {static_cast<double>(si.startTimestamp),
                                   static_cast<double>(si.endTimestamp)};
          k.insert(k.end(), row.begin(), row.end());
          stats.kept.push_back(std::move(k));
        }
      }
      stats.evaluate_ns += now_ns() - e0;
    });
    stats.decodes += counts.decodes;
    stats.overflows += counts.overflows;
    stats.errors += counts.errors;
    stats.decode_ns += now_ns() - t0;
  }

  void worker() {
    std::unique_lock lock(mu);
    while (!quit) {
      cv.wait_for(lock, std::chrono::milliseconds(config.decode_ms), [&] { return quit; });
      if (quit) break;
      decode();
      if (stats.decodes <= 2) {  // where a crash inside CUPTI's decode would be
        std::fprintf(stderr, "pm_floor: decode %llu: %llu samples, %llu errors\n",
                     static_cast<unsigned long long>(stats.decodes),
                     static_cast<unsigned long long>(stats.samples),
                     static_cast<unsigned long long>(stats.errors));
        std::fflush(stderr);
      }
    }
  }
};

Floor* g_floor = nullptr;

// A crash inside CUPTI's PM sampling (this floor died without a word on the H100): the native
// frames on stderr, then the default action. Bench-only: the product never installs handlers.
void on_fatal_signal(int sig) {
  void* frames[48];
  int n = backtrace(frames, 48);
  const char msg[] = "pm_floor: fatal signal, native frames:\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

bool pm_floor_start(const PmFloorConfig& config, std::string& why) {
  if (g_floor != nullptr) {
    why = "the PM floor is already running";
    return false;
  }
  auto f = std::make_unique<Floor>();
  f->config = config;
  signal(SIGSEGV, on_fatal_signal);
  signal(SIGABRT, on_fatal_signal);
  f->step("before");
  const CuptiApi* cupti = load_cupti(why);
  if (cupti == nullptr) return false;
  f->api = load_counters_api(*cupti, why);
  if (f->api == nullptr || !ensure_profiler_initialized(*f->api, why)) return false;
  f->step("profiler initialised");
  std::string chip = chip_name(*f->api, 0, why);
  if (chip.empty()) return false;
  // The counter availability of the device, as Proton's sampler passes it (without it, the
  // first GPU run of this floor crashed at start).
  std::vector<uint8_t> availability = pm_counter_availability(*f->api, 0);
  f->step("availability");
  if (!f->host.init(*f->api, CUPTI_PROFILER_TYPE_PM_SAMPLING, chip, availability, why)) {
    return false;
  }
  f->step("host initialised");
  if (config.metrics.empty()) {  // our default set, resolved as our sampler resolves it
    std::string notes;
    if (!f->host.resolve(default_sampling_metrics(), false, f->metrics, notes, why)) return false;
  } else {
    f->metrics = config.metrics;
  }
  f->stats.totals.assign(f->metrics.size(), 0.0);
  f->stats.metrics = f->metrics;
  size_t passes = 0;
  if (!f->host.configure(f->metrics, f->config_image, passes, why)) return false;
  f->stats.passes = static_cast<uint32_t>(passes);
  f->step("configured");
  for (const std::string& m : f->metrics)
    f->ptrs.push_back(m.c_str());
  // Our sizes for the interval unless the caller names others: the same calls as our sampler.
  PmSizes sizes = pm_sizes(config.interval_us);
  if (config.hardware_buffer != 0) sizes.hardware_buffer_bytes = config.hardware_buffer;
  if (config.image_samples != 0) sizes.image_samples = config.image_samples;
  f->object = pm_sampling_begin(*f->api, 0, f->config_image, f->ptrs, sizes, f->image, why);
  if (f->object == nullptr) return false;
  f->stats.image_bytes = f->image.size();
  f->step("started");
  Floor* raw = f.release();
  raw->thread = std::thread([raw] { raw->worker(); });
  g_floor = raw;
  return true;
}

PmFloorStats pm_floor_stop() {
  Floor* f = g_floor;
  if (f == nullptr) return {};
  g_floor = nullptr;
  {
    std::lock_guard lock(f->mu);
    f->step("stopping");
    f->quit = true;
    f->cv.notify_all();
  }
  f->thread.join();
  {
    std::lock_guard lock(f->mu);
    f->step("decode thread joined");
  }
  pm_sampling_stop(*f->api, f->object);
  {
    std::lock_guard lock(f->mu);
    f->step("sampling stopped");
    f->decode();
    f->step("stopped");
  }
  pm_sampling_end(*f->api, f->object);
  PmFloorStats s = std::move(f->stats);
  delete f;
  return s;
}

}  // namespace proton::bench
