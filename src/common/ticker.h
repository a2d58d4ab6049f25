// A background thread that calls a function at a fixed period until stopped.
//
// The CUPTI backend uses one to hand over partly filled activity buffers: without it, records
// reach the processor only when a buffer fills, and a slow stream of records (one per graph
// launch in mode="graph") keeps every launch tag in memory until then.
//
// stop() wakes the thread at once and joins it; a call in progress finishes first. The
// function runs on the ticker's thread only, never concurrently with itself.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace proton {

class Ticker {
 public:
  Ticker() = default;
  ~Ticker() { stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  /// Calls `tick` every `period` (first call one period from now). Stops a running ticker first.
  /// A zero period starts nothing.
  void start(std::chrono::milliseconds period, std::function<void()> tick);
  /// Wakes and joins the thread; no tick starts after it returns. Idempotent.
  void stop();
  bool running() const { return thread_.joinable(); }

 private:
  void loop(std::chrono::milliseconds period);

  std::function<void()> tick_;  // set before the thread starts, read by it only
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace proton
