// A Backend that emits the records a test gives it, as a GPU backend would.
#pragma once

#include <mutex>
#include <vector>

#include "attribution/record_processor.h"
#include "backends/backend.h"

namespace proton::testing {

class FakeBackend : public Backend {
 public:
  struct Log {
    int starts = 0, stops = 0, pauses = 0, resumes = 0, flushes = 0;
    int local_rank = -2;          // the last start's BackendOptions::local_rank
    bool kernel_records = false;  // the last start's BackendOptions::kernel_records
    int records_enabled = 0;      // enable_kernel_records calls
    int records_disabled = 0;     // disable_kernel_records calls
  };
  explicit FakeBackend(Log* log) : log_(log) {}

  std::string_view name() const override { return "fake"; }
  bool start(RecordProcessor* sink, const BackendOptions& options, std::string&) override {
    sink_ = sink;
    ++log_->starts;
    log_->local_rank = options.local_rank;
    log_->kernel_records = options.kernel_records;
    return true;
  }
  void pause() override { ++log_->pauses; }
  void resume() override { ++log_->resumes; }
  void flush() override {
    ++log_->flushes;
    std::vector<KernelRecord> batch;
    {
      std::lock_guard lock(mu_);  // a test may queue records while another thread flushes
      batch.swap(pending_);
    }
    sink_->process(batch);
  }
  void stop() override { ++log_->stops; }
  bool enable_kernel_records(std::string&) override {
    ++log_->records_enabled;
    log_->kernel_records = true;
    return true;
  }
  void disable_kernel_records() override {
    ++log_->records_disabled;
    log_->kernel_records = false;
  }
  DeviceInfo device(uint32_t id) override {
    DeviceInfo d;
    d.id = id;
    d.arch = "90";
    d.num_sms = 132;
    d.clock_rate = 1980000;
    d.memory_clock_rate = 2619000;
    d.bus_width = 5120;
    return d;
  }

  /// Queues a completed kernel; delivered at the next flush.
  void complete(uint64_t correlation, NameId name, uint64_t duration, uint32_t device = 0) {
    KernelRecord r;
    r.correlation = correlation;
    r.start_ns = 1000;
    r.end_ns = 1000 + duration;
    r.name = name;
    r.device_id = device;
    complete(r);
  }
  /// Queues a record exactly as given (timestamps, stream, ...).
  void complete(const KernelRecord& r) {
    std::lock_guard lock(mu_);
    pending_.push_back(r);
  }
  size_t pending() const {
    std::lock_guard lock(mu_);
    return pending_.size();
  }

 private:
  Log* log_;
  RecordProcessor* sink_ = nullptr;
  mutable std::mutex mu_;
  std::vector<KernelRecord> pending_;
};

}  // namespace proton::testing
