// Per-kernel hardware counters with CUPTI's Range Profiler (cupti_range_profiler.h).
//
// Two ways to cut ranges (CounterConfig::range):
//   user (default)  the launch callback pushes a range named after the launch's correlation id
//                   at API entry and pops it at API exit. No synchronisation per launch; the
//                   range ends in stream order after the kernel, but everything the GPU runs
//                   meanwhile (kernels of other streams, of other threads) counts into it. Launch
//                   API calls of one context are serialised by a mutex so ranges nest properly.
//   auto            CUPTI cuts one range per kernel and serialises kernels (a context
//                   synchronisation per launch); values map to launches by their order.
// Ranges accumulate in a counter-data image of `batch` ranges. When it is full (and at flush),
// the launching thread stops the profiler, decodes (this synchronises the context: one sync per
// batch, not per launch), copies the image out, re-initialises it in place and restarts; a
// worker thread evaluates the copy into metric values and hands them to the RecordProcessor,
// off the launching thread. CUDA graph launches are one range (the whole replay).
//
// Threads: start/flush/stop on the session thread; on_enter/on_exit on launching threads (one
// context at a time, under its mutex); evaluate on the worker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cupti/counter_host.h"
#include "backends/cupti/counters_info.h"
#include "data/counter_batch.h"
#include "data/counter_config.h"

namespace proton {
class RecordProcessor;
}

namespace proton::cupti {

class RangeProfiler {
 public:
  using Stats = CounterRunStats;

  RangeProfiler() = default;
  ~RangeProfiler();

  /// Resolves and schedules the metrics on device 0's chip. Fails for unknown metric names
  /// (`user_error` set: a message listing the chip's metrics) and for sets needing more than one
  /// pass unless config.replay. Sets `notice` to what the user should know at start.
  bool start(const CountersApi& api, RecordProcessor* sink, const CounterConfig& config,
             std::string& notice, bool& user_error, std::string& why);
  /// Decodes what every context has so far and waits for the worker to deliver it.
  void flush();
  void stop();

  /// Launch callbacks (outermost launch API of a thread). Never throw.
  void on_enter(CUcontext ctx, uint64_t correlation) noexcept;
  void on_exit() noexcept;

  const std::vector<std::string>& metrics() const { return metrics_; }
  Stats stats() const;
  bool running() const { return running_; }

  static constexpr size_t kMaxContexts = 8;
  /// The stats of the last profiler stopped in this process (benchmarks read them after
  /// finalize).
  static Stats last_stats();

 private:
  struct Image {
    std::vector<uint8_t> data;
    std::vector<uint64_t> correlations;  // auto ranges: launches in order
  };
  struct Context {
    std::atomic<CUcontext> ctx{nullptr};
    // Held from on_enter to on_exit of one launch. Timed: a launch whose exit callback never
    // came (callbacks disabled mid-launch by a pause) must not block every later one.
    std::timed_mutex mu;
    CUpti_RangeProfiler_Object* object = nullptr;
    std::unique_ptr<Image> image;
    size_t in_batch = 0;
    bool failed = false;
  };
  Context* context_for(CUcontext ctx) noexcept;     // creates the slot on first use
  bool enable(Context& c, std::string& why);        // requires c.mu
  bool configure(Context& c, std::string& why);     // requires c.mu: init + SetConfig + Start
  bool init_image(Context& c, std::string& why);    // requires c.mu
  bool set_config(Context& c, std::string& why);    // requires c.mu
  bool start_ranges(Context& c, std::string& why);  // requires c.mu
  // Requires c.mu: stop, decode, hand a copy to the worker, restart on the same image.
  void rotate(Context& c) noexcept;
  std::unique_ptr<Image> take_image();
  void worker();
  void evaluate(Image& image);

  const CountersApi* api_ = nullptr;
  RecordProcessor* sink_ = nullptr;
  CounterConfig config_;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_ptrs_;
  std::vector<uint8_t> config_image_;
  size_t image_bytes_ = 0;
  size_t batch_ = 512;
  CounterHost host_;  // evaluation: the worker only, after start()
  CounterSchema schema_;
  bool running_ = false;
  Context contexts_[kMaxContexts];
  std::mutex slots_mu_;  // creating a context slot

  // Worker queue (guarded by queue_mu_).
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::condition_variable idle_cv_;
  std::deque<std::unique_ptr<Image>> full_;
  std::vector<std::unique_ptr<Image>> free_;
  bool busy_ = false;
  bool quit_ = false;
  std::thread thread_;

  mutable std::mutex stats_mu_;
  Stats stats_;
};

/// The process's range profiler while mode="counters" runs (launch_callbacks.cpp calls it).
extern std::atomic<RangeProfiler*> g_range_profiler;

}  // namespace proton::cupti
