#include "common/ticker.h"

#include <utility>

#include "common/thread_name.h"

namespace proton {

void Ticker::start(std::chrono::milliseconds period, std::function<void()> tick) {
  stop();
  if (period.count() <= 0 || !tick) return;
  tick_ = std::move(tick);
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this, period] {
    name_this_thread("proton-flush");
    loop(period);
  });
}

void Ticker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  tick_ = nullptr;
}

void Ticker::loop(std::chrono::milliseconds period) {
  auto next = std::chrono::steady_clock::now() + period;
  std::unique_lock lock(mu_);
  for (;;) {
    if (wake_.wait_until(lock, next, [this] { return stopping_; })) return;
    lock.unlock();
    tick_();
    lock.lock();
    // Fixed delay, not fixed rate: a slow tick (a big flush) never queues up catch-up ticks.
    next = std::chrono::steady_clock::now() + period;
  }
}

}  // namespace proton
