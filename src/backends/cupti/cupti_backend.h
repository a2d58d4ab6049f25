// The CUPTI backend: kernel activity records, correlated through launch callbacks.
//
// Threads: start/pause/resume/flush/stop/device come from the session layer, serialised by its
// API lock. Launch callbacks run on any application thread and touch only LaunchStage (see
// launch_callbacks.h). Completed buffers arrive on CUPTI's worker thread or on the thread in
// flush() or the periodic flusher's thread, serialised by activity_buffers' consumer lock.
#pragma once

#include <cupti.h>

#include <atomic>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cupti/activity_buffers.h"
#include "backends/cupti/cupti_api.h"
#include "backends/cupti/cupti_records.h"
#include "backends/cupti/pm_sampling.h"
#include "backends/cupti/range_profiler.h"
#include "common/ticker.h"

namespace proton::cupti {

class CuptiBackend final : public Backend, private BufferConsumer {
 public:
  CuptiBackend() = default;
  ~CuptiBackend() override;

  std::string_view name() const override { return "cupti"; }
  bool start(RecordProcessor* sink, const BackendOptions& options, std::string& why) override;
  void pause() override;
  void resume() override;
  void flush() override;
  void stop() override;
  DeviceInfo device(uint32_t id) override;
  /// cuptiGetTimestamp: the clock of kernel records (traces align it with the steady clock).
  uint64_t timestamp_ns() override;
  /// PC sampling (pc_sampling.h) on top of kernel timing.
  bool start_pc_sampling(const PcSamplingOptions& options, std::string& why) override;
  void stop_pc_sampling() override;
  std::string counters_problem() const override { return counters_problem_; }
  /// True when the counters problem is the user's to fix (bad metric name, replay needed).
  bool counters_user_error() const override { return counters_user_error_; }
  /// CONCURRENT_KERNEL in a backend started without it, then the launch callbacks tag again.
  bool enable_kernel_records(std::string& why) override;
  void disable_kernel_records() override;

 private:
  void consume(uint8_t* buffer, size_t valid_bytes) noexcept override;
  bool subscribe(std::string& why);
  void undo_start();
  void sync_current_context();
  void periodic_flush();  // the ticker's check

  // Set by start() and cleared by stop(), both on the session layer's thread; read by
  // consume() only while registered as the buffer consumer (between those two points).
  const CuptiApi* api_ = nullptr;
  const DriverApi* driver_ = nullptr;
  RecordProcessor* processor_ = nullptr;
  CUpti_SubscriberHandle subscriber_ = nullptr;
  bool running_ = false;
  bool paused_ = false;
  bool driver_only_ = false;     // launch callbacks of the driver domain only (backend.h)
  bool cupti_finalize_ = false;  // BackendOptions::cupti_finalize, for stop()
  bool host_calls_ = false;      // BackendOptions::host_calls, for pause() and resume()
  // Checks every BackendOptions::flush_interval_ms while running whether to hand partly
  // filled buffers over (periodic_flush, flush_policy.h).
  Ticker flusher_;
  FlushPolicy flush_policy_;
  // The later of the last buffer consumed and the last periodic flush (steady ns): written by
  // consume() and the ticker, read by the ticker.
  std::atomic<uint64_t> quiet_since_ns_{0};

  // Owned by consume(), which activity_buffers serialises (its consumer lock).
  std::unique_ptr<KernelBatcher> batcher_;
  uint64_t incomplete_buffers_ = 0;  // buffers cut short by an unreadable record

  // Hardware counters (mode="counters", counters_backend.cpp). Started after kernel timing,
  // flushed before it (values first, so the join finds them), stopped after the launch
  // callbacks are off.
  void start_counters(const CounterConfig& config, int local_rank);
  void flush_counters();
  void stop_counters();
  std::unique_ptr<RangeProfiler> ranges_;
  std::unique_ptr<PmSampler> sampler_;
  std::string counters_problem_;
  bool counters_user_error_ = false;
};

}  // namespace proton::cupti
