// The activity buffer pool: recycling, the cap, alignment, reconfiguration.
#include "backends/cupti/activity_buffers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace proton::cupti {
namespace {

TEST(BufferPool, RecyclesCompletedBuffersInsteadOfAllocating) {
  BufferPool pool;
  pool.configure(1000, 4);
  size_t size = 0;
  uint8_t* a = pool.acquire(size);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(size, 1000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 8, 0u);
  pool.release(a, size);
  uint8_t* b = pool.acquire(size);
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool.stats().allocated, 1u);
  pool.release(b, size);
}

TEST(BufferPool, ReserveAllocatesUpFrontWithinTheCap) {
  BufferPool pool;
  pool.configure(1000, 3);
  pool.reserve(2);
  EXPECT_EQ(pool.stats().allocated, 2u);
  EXPECT_EQ(pool.stats().free, 2u);
  pool.reserve(2);  // already there: nothing more
  EXPECT_EQ(pool.stats().allocated, 2u);
  size_t size = 0;
  uint8_t* a = pool.acquire(size);  // a reserved buffer, not a new one
  uint8_t* b = pool.acquire(size);
  EXPECT_EQ(pool.stats().allocated, 2u);
  EXPECT_EQ(a[0], 0);
  EXPECT_EQ(b[999], 0);  // written at reserve: resident, and zeroed
  pool.reserve(10);      // capped at 3
  EXPECT_EQ(pool.stats().allocated, 3u);
  pool.release(a, size);
  pool.release(b, size);
}

TEST(BufferPool, SizesAreRoundedToRecordAlignment) {
  BufferPool pool;
  pool.configure(1001, 2);
  size_t size = 0;
  uint8_t* a = pool.acquire(size);
  EXPECT_EQ(size, 1008u);
  pool.release(a, size);
}

TEST(BufferPool, DeclinesAtTheCapSoCuptiCountsDrops) {
  BufferPool pool;
  pool.configure(64, 2);
  size_t s1 = 0, s2 = 0, s3 = 0;
  uint8_t* a = pool.acquire(s1);
  uint8_t* b = pool.acquire(s2);
  uint8_t* c = pool.acquire(s3);
  EXPECT_NE(a, nullptr);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(s3, 0u);
  EXPECT_EQ(pool.stats().declined, 1u);
  pool.release(a, s1);
  c = pool.acquire(s3);
  EXPECT_EQ(c, a);
  pool.release(b, s2);
  pool.release(c, s3);
}

TEST(BufferPool, BuffersOfAnOldSizeAreFreedWhenTheyComeBack) {
  BufferPool pool;
  pool.configure(64, 2);
  size_t old_size = 0;
  uint8_t* lent = pool.acquire(old_size);
  pool.configure(128, 2);
  pool.release(lent, old_size);  // freed, not pooled
  EXPECT_EQ(pool.stats().free, 0u);
  size_t size = 0;
  uint8_t* fresh = pool.acquire(size);
  EXPECT_EQ(size, 128u);
  pool.release(fresh, size);
  EXPECT_EQ(pool.stats().free, 1u);
}

TEST(BufferPool, ReleasingNothingIsHarmless) {
  BufferPool pool;
  pool.release(nullptr, 0);
  EXPECT_EQ(pool.stats().free, 0u);
}

TEST(BufferCallbacks, CompletedBuffersReachTheConsumerAndReturnToThePool) {
  struct Counter final : BufferConsumer {
    void consume(uint8_t*, size_t valid) noexcept override { bytes += valid; }
    size_t bytes = 0;
  } counter;
  buffer_pool().configure(256, 4);
  set_buffer_consumer(&counter);
  uint8_t* buf = nullptr;
  size_t size = 0, max_records = 1;
  on_buffer_requested(&buf, &size, &max_records);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(size, 256u);
  EXPECT_EQ(max_records, 0u);
  size_t free_before = buffer_pool().stats().free;
  on_buffer_completed(nullptr, 0, buf, size, 40);
  EXPECT_EQ(counter.bytes, 40u);
  EXPECT_EQ(buffer_pool().stats().free, free_before + 1);
  set_buffer_consumer(nullptr);
  on_buffer_requested(&buf, &size, &max_records);
  on_buffer_completed(nullptr, 0, buf, size, 40);  // no consumer: recycled unread
  EXPECT_EQ(counter.bytes, 40u);
}

// With the buffer thread, completion only queues: the consumer runs on another thread, in
// completion order, and wait_for_deliveries() is the barrier a flush relies on.
TEST(BufferCallbacks, BufferThreadDeliversOffTheCompletingThreadInOrder) {
  struct Recorder final : BufferConsumer {
    void consume(uint8_t*, size_t valid) noexcept override {
      if (std::this_thread::get_id() == caller) on_caller = true;
      order.push_back(valid);
      bytes.fetch_add(valid);
    }
    std::thread::id caller = std::this_thread::get_id();
    bool on_caller = false;
    std::vector<size_t> order;  // written by the worker only
    std::atomic<size_t> bytes{0};
  } recorder;
  buffer_pool().configure(256, 64);
  set_buffer_thread(true);
  set_buffer_consumer(&recorder);
  size_t free_before = buffer_pool().stats().free;
  for (size_t i = 1; i <= 50; ++i) {
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    on_buffer_requested(&buf, &size, &max_records);
    ASSERT_NE(buf, nullptr);
    on_buffer_completed(nullptr, 0, buf, size, 8 * i);
  }
  ASSERT_TRUE(wait_for_deliveries());
  EXPECT_EQ(recorder.bytes.load(), 8u * 50 * 51 / 2);
  EXPECT_FALSE(recorder.on_caller);
  ASSERT_EQ(recorder.order.size(), 50u);
  for (size_t i = 0; i < 50; ++i)
    EXPECT_EQ(recorder.order[i], 8 * (i + 1));
  EXPECT_GE(buffer_pool().stats().free, free_before) << "every buffer back in the pool";
  set_buffer_consumer(nullptr);
  set_buffer_thread(false);
}

// Clearing the consumer waits for queued buffers: none reaches a consumer after it is gone.
TEST(BufferCallbacks, ClearingTheConsumerDrainsTheQueueFirst) {
  struct Slow final : BufferConsumer {
    void consume(uint8_t*, size_t) noexcept override {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      seen.fetch_add(1);
    }
    std::atomic<int> seen{0};
  } slow;
  buffer_pool().configure(256, 64);
  set_buffer_thread(true);
  set_buffer_consumer(&slow);
  for (int i = 0; i < 20; ++i) {
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    on_buffer_requested(&buf, &size, &max_records);
    on_buffer_completed(nullptr, 0, buf, size, 8);
  }
  set_buffer_consumer(nullptr);
  EXPECT_EQ(slow.seen.load(), 20);
  set_buffer_thread(false);
}

}  // namespace
}  // namespace proton::cupti
