#include "common/ticker.h"

#if defined(__linux__)
#include <pthread.h>
#endif

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "common/thread_name.h"

namespace proton {
namespace {

using namespace std::chrono_literals;

// Waits (up to a generous limit, never a timing assertion) until `count` reaches `n`.
bool wait_for_count(std::atomic<int>& count, int n) {
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (count.load() < n) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(Ticker, CallsRepeatedlyUntilStopped) {
  std::atomic<int> ticks{0};
  Ticker t;
  t.start(1ms, [&] { ++ticks; });
  EXPECT_TRUE(t.running());
  ASSERT_TRUE(wait_for_count(ticks, 3));
  t.stop();
  EXPECT_FALSE(t.running());
  int after_stop = ticks.load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(ticks.load(), after_stop) << "a tick ran after stop() returned";
}

TEST(Ticker, StopDoesNotWaitForThePeriod) {
  // A one-hour period: stop() must wake the thread, or this test would hang until ctest's
  // timeout kills it.
  std::atomic<int> ticks{0};
  Ticker t;
  t.start(std::chrono::hours(1), [&] { ++ticks; });
  t.stop();
  EXPECT_EQ(ticks.load(), 0);
}

TEST(Ticker, ZeroPeriodStartsNothing) {
  Ticker t;
  t.start(0ms, [] { FAIL() << "ticked with period 0"; });
  EXPECT_FALSE(t.running());
  t.stop();  // harmless
}

TEST(Ticker, StopWaitsForATickInProgress) {
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false;
  std::atomic<bool> finished{false};
  Ticker t;
  t.start(1ms, [&] {
    {
      std::lock_guard lock(mu);
      entered = true;
    }
    cv.notify_all();
    std::this_thread::sleep_for(20ms);
    finished = true;
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered; });
  }
  t.stop();
  EXPECT_TRUE(finished.load()) << "stop() returned while a tick was still running";
}

TEST(Ticker, RestartReplacesTheFunction) {
  std::atomic<int> first{0};
  std::atomic<int> second{0};
  Ticker t;
  t.start(1ms, [&] { ++first; });
  ASSERT_TRUE(wait_for_count(first, 1));
  t.start(1ms, [&] { ++second; });
  int first_at_restart = first.load();
  ASSERT_TRUE(wait_for_count(second, 2));
  EXPECT_EQ(first.load(), first_at_restart);
}

#if defined(__linux__)
// Our threads are named so that top -H, gdb and py-spy tell them from the program's own.
std::string name_of(pthread_t t) {
  char name[32] = {};
  pthread_getname_np(t, name, sizeof name);
  return name;
}

TEST(ThreadName, TheTickerThreadIsNamedAndLongNamesAreCut) {
  std::mutex mu;
  std::string seen;
  Ticker t;
  std::atomic<int> ticks{0};
  t.start(1ms, [&] {
    std::lock_guard lock(mu);
    seen = name_of(pthread_self());
    ++ticks;
  });
  ASSERT_TRUE(wait_for_count(ticks, 1));
  t.stop();
  EXPECT_EQ(seen, "proton-flush");

  std::string cut;
  std::thread([&] {
    name_this_thread("proton-a-name-longer-than-fifteen");
    cut = name_of(pthread_self());
  }).join();
  EXPECT_EQ(cut, "proton-a-name-l");  // Linux keeps 15 characters; longer is not an error
}
#endif

}  // namespace
}  // namespace proton
