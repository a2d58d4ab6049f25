#include "thread_counters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace proton {
namespace {

// Work the compiler cannot fold away: `n` dependent steps.
uint64_t spin(uint64_t n) {
  std::atomic<uint64_t> x{1};
  for (uint64_t i = 0; i < n; ++i)
    x.store(x.load(std::memory_order_relaxed) * 3 + i, std::memory_order_relaxed);
  return x.load();
}

TEST(ThreadCounters, CountThisThreadsWorkOrSayWhyNot) {
  ThreadCounters c;
  std::string why;
  if (!c.open(why)) {
    // No PMU here (CI runs in a VM): a reason, and nothing read.
    EXPECT_FALSE(why.empty());
    EXPECT_FALSE(c.is_open());
    ThreadCounters::Values v;
    EXPECT_FALSE(c.read(v));
    GTEST_SKIP() << why;
  }
  ThreadCounters::Values a, b, d;
  ASSERT_TRUE(c.read(a));
  spin(100000);
  ASSERT_TRUE(c.read(b));
  EXPECT_GE(b.instructions - a.instructions, 100000u);
  EXPECT_GT(b.cycles, a.cycles);
  // Another thread's work is not ours: its million steps must not show up here.
  std::thread([] { spin(1000000); }).join();
  ASSERT_TRUE(c.read(d));
  EXPECT_LT(d.instructions - b.instructions, 1000000u);
}

TEST(ThreadCounters, ReadBeforeOpenFails) {
  ThreadCounters c;
  ThreadCounters::Values v;
  EXPECT_FALSE(c.is_open());
  EXPECT_FALSE(c.read(v));
}

}  // namespace
}  // namespace proton
