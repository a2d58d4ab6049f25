// Device-wide hardware counters sampled at a fixed interval: CUPTI PM sampling
// (cupti_pmsampling.h). The default source of mode="counters": sessions split the samples over
// the kernels that ran in them (data/counter_split.h) and draw them as counter tracks.
//
// The GPU writes samples into a hardware buffer; our thread decodes it every kDecodePeriod
// into a counter-data image, evaluates each completed sample (start/end timestamps and metric
// values) and hands them to the RecordProcessor, which gives them to the sessions. Nothing
// runs on launching threads and nothing synchronises the device. Samples are device-wide:
// every kernel running during a sample contributes to it. One device per sampler: the current
// context's, else LOCAL_RANK's, else 0 (pm_device_for); a process using several GPUs gets the
// counters of that one only.
//
// Threads: start/flush/stop on the session thread; decoding on our worker, serialised with
// flush by mu_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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

class PmSampler {
 public:
  using Stats = PmRunStats;

  PmSampler() = default;
  ~PmSampler();

  /// Samples the device pm_device() names (`local_rank`: the rank's, -1 when unknown) every
  /// config.interval_us. Unknown user-named metrics fail with `user_error` set and a message
  /// listing the chip's metrics.
  bool start(const CountersApi& api, RecordProcessor* sink, const CounterConfig& config,
             int local_rank, std::string& notice, bool& user_error, std::string& why);
  void flush();  // decodes and delivers what the hardware buffer holds now
  void stop();

  Stats stats() const;
  const std::vector<std::string>& metrics() const { return metrics_; }
  /// The stats of the last sampler stopped in this process (benchmarks read them after
  /// finalize), or of the running one.
  static Stats last_stats();

 private:
  void worker();
  void decode_once();  // requires mu_

  const CountersApi* api_ = nullptr;
  RecordProcessor* sink_ = nullptr;
  CUpti_PmSampling_Object* object_ = nullptr;
  CounterHost host_;
  CounterSchema schema_;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_ptrs_;
  std::vector<uint8_t> config_image_;
  std::vector<uint8_t> image_;
  uint32_t device_ = 0;
  uint32_t interval_us_ = 0;

  std::mutex mu_;  // decoding: the worker and flush
  std::condition_variable cv_;
  bool quit_ = false;
  bool running_ = false;
  std::thread thread_;
  Stats stats_;  // guarded by mu_
};

}  // namespace proton::cupti
