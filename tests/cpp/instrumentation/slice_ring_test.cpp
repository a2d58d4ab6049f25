// The lock-free slice ring and the per-thread launch queue: order of give-back, wrap, laps,
// give-up against a late launch, and many threads at once (run under TSan in the test command).
#include "backends/instrumentation/slice_ring.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "backends/instrumentation/launch_queue.h"

namespace proton::instr {
namespace {

// Minor page faults of the calling thread so far.
long thread_faults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

// The ring's table is faulted in when the ring is made (at the session's start), not a page at
// a time by the launches: 60 slices of 1 MB begin on 60 pages of a 64 MB pool's table.
TEST(SliceRing, ReservingTouchesNoNewPages) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan's shadow of the table faults in at its first atomic access";
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  GTEST_SKIP() << "TSan's shadow of the table faults in at its first atomic access";
#endif
#endif
  SliceRing ring(64 << 20);
  const long before = thread_faults();
  for (int i = 0; i < 60; ++i) {
    SliceRing::Slice s;
    ASSERT_TRUE(ring.reserve(1 << 20, 128, s));
    ASSERT_TRUE(ring.mark_queued(s.key));
  }
  EXPECT_LT(thread_faults() - before, 8);
}

TEST(SliceRing, SlicesAreAlignedInThePoolAndNeverStraddleItsEnd) {
  SliceRing ring(1000);  // rounded up to 1024
  EXPECT_EQ(ring.size(), 1024u);
  SliceRing::Slice a, b, c;
  ASSERT_TRUE(ring.reserve(100, 64, a));
  ASSERT_TRUE(ring.reserve(300, 256, b));
  EXPECT_EQ(a.start, 0u);
  EXPECT_EQ(b.start % 256, 0u);
  EXPECT_GE(b.start, 128u);
  EXPECT_FALSE(ring.reserve(700, 128, c)) << "768 bytes are out";
  ring.give_back(a.key);
  ring.give_back(b.key);
  EXPECT_EQ(ring.in_flight(), 0u);
  // 768 bytes in, a 512-byte slice does not fit before the end: it starts the next lap.
  ASSERT_TRUE(ring.reserve(500, 128, c));
  EXPECT_EQ(c.start % ring.size(), 0u);
  EXPECT_EQ(c.start, 1024u);
}

TEST(SliceRing, TheTailMovesOnlyOverTheSlicesBackInRingOrder) {
  SliceRing ring(1024);
  SliceRing::Slice s[4];
  for (auto& slice : s)
    ASSERT_TRUE(ring.reserve(256, 128, slice));
  SliceRing::Slice more;
  EXPECT_FALSE(ring.reserve(128, 128, more));
  ring.give_back(s[2].key);
  ring.give_back(s[1].key);
  EXPECT_EQ(ring.in_flight(), 1024u) << "s[0] still out holds every later slice";
  EXPECT_FALSE(ring.reserve(128, 128, more));
  ring.give_back(s[0].key);
  EXPECT_EQ(ring.in_flight(), 256u);
  uint64_t key = 0;
  bool queued = true;
  ASSERT_TRUE(ring.oldest(key, queued));
  EXPECT_EQ(key, s[3].key);
  EXPECT_FALSE(queued);
  ASSERT_TRUE(ring.reserve(700, 128, more));
  EXPECT_EQ(more.start, 1024u) << "laps go on where the first ended";
}

// A ring whose size is not a power of two (PROTON_INSTR_POOL_MB=100) places slices by division
// where a power-of-two ring masks: the same laps and offsets.
TEST(SliceRing, ARingOfAnySizeWrapsTheSame) {
  SliceRing ring(640);  // five granules
  SliceRing::Slice a, b, c;
  ASSERT_TRUE(ring.reserve(384, 128, a));
  EXPECT_EQ(a.start, 0u);
  EXPECT_FALSE(ring.reserve(384, 128, b)) << "not before the end, and the next lap holds a";
  ring.give_back(a.key);
  ASSERT_TRUE(ring.reserve(384, 128, b));
  EXPECT_EQ(b.start, 640u) << "the next lap, at the pool's start";
  EXPECT_EQ(ring.in_flight(), 640u);
  ring.give_back(b.key);
  ASSERT_TRUE(ring.reserve(256, 128, c));
  EXPECT_EQ(c.start % ring.size(), 384u);
  EXPECT_TRUE(ring.mark_queued(c.key));
  ring.give_back(c.key);
  EXPECT_EQ(ring.in_flight(), 0u);
}

TEST(SliceRing, GivingBackTwiceOrAnOldLapsSliceChangesNothing) {
  SliceRing ring(512);
  SliceRing::Slice a, b;
  ASSERT_TRUE(ring.reserve(512, 128, a));
  ring.give_back(a.key);
  ASSERT_TRUE(ring.reserve(512, 128, b));  // the same place, one lap on
  EXPECT_EQ(a.key % 512, b.key % 512);
  ring.give_back(a.key);  // a's word is b's now: b stays out
  EXPECT_EQ(ring.in_flight(), 512u);
  ring.give_back(b.key);
  ring.give_back(b.key);
  EXPECT_EQ(ring.in_flight(), 0u);
}

TEST(SliceRing, GiveUpAndALateLaunchNeverBothWin) {
  SliceRing ring(1024);
  SliceRing::Slice a, b;
  ASSERT_TRUE(ring.reserve(256, 128, a));
  ASSERT_TRUE(ring.reserve(256, 128, b));
  EXPECT_TRUE(ring.mark_queued(a.key));
  EXPECT_FALSE(ring.give_up(a.key)) << "a's launch is queued: its kernel writes the slice";
  EXPECT_TRUE(ring.give_up(b.key));
  EXPECT_FALSE(ring.mark_queued(b.key)) << "b was given up: its late launch is dropped";
  ring.give_back(a.key);
  EXPECT_EQ(ring.in_flight(), 0u);
}

// Threads reserve and give back at once (each slice checked for overlap with every slice out
// when it was handed out): the head never passes a slice in flight.
class ManyThreads : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ManyThreads, NeverShareASliceInFlight) {
  SliceRing ring(GetParam());
  constexpr int kThreads = 4, kRounds = 4000;
  std::vector<std::atomic<int>> owner(ring.size() / SliceRing::kGranule);
  std::atomic<int> overlaps{0}, reserved{0};
  std::vector<std::thread> threads;
  for (int id = 1; id <= kThreads; ++id) {
    threads.emplace_back([&, id] {
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t bytes = 128 * (1 + (i * 7 + id) % 9);
        SliceRing::Slice s;
        if (!ring.reserve(bytes, 128, s)) {
          std::this_thread::yield();
          continue;
        }
        ++reserved;
        const uint64_t first = (s.start % ring.size()) / SliceRing::kGranule;
        const uint64_t n = (bytes + SliceRing::kGranule - 1) / SliceRing::kGranule;
        for (uint64_t g = first; g < first + n; ++g) {
          int expected = 0;
          if (!owner[g].compare_exchange_strong(expected, id)) ++overlaps;
        }
        ring.mark_queued(s.key);
        for (uint64_t g = first; g < first + n; ++g)
          owner[g].store(0);
        ring.give_back(s.key);
      }
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(reserved.load(), kRounds);
  EXPECT_EQ(ring.in_flight(), 0u);
}

// A power-of-two ring (masks) and one of 73 granules (divisions).
INSTANTIATE_TEST_SUITE_P(SliceRing, ManyThreads, ::testing::Values(8192u, 73u * 128u));

TEST(LaunchQueue, RecordsComeOutInOrderAndAFullQueueRefuses) {
  LaunchQueue q;
  for (uint64_t i = 0; i < LaunchQueue::kSlots; ++i) {
    LaunchRecord r;
    r.key = i;
    ASSERT_TRUE(q.push(r));
  }
  EXPECT_FALSE(q.push(LaunchRecord{}));
  EXPECT_EQ(q.pending(), LaunchQueue::kSlots);
  std::vector<uint64_t> keys;
  EXPECT_EQ(q.take(10, [&](const LaunchRecord& r) { keys.push_back(r.key); }), 10u);
  EXPECT_EQ(keys.front(), 0u);
  EXPECT_EQ(keys.back(), 9u);
  EXPECT_TRUE(q.push(LaunchRecord{}));
  EXPECT_EQ(q.written(), LaunchQueue::kSlots + 1);
  EXPECT_EQ(q.taken(), 10u);
}

// One writer, one reader, at once: every record arrives once, in order.
TEST(LaunchQueue, AWriterAndAReaderAtOnceLoseNothing) {
  LaunchQueue q;
  constexpr uint64_t kRecords = 50000;
  std::thread writer([&] {
    for (uint64_t i = 0; i < kRecords;) {
      LaunchRecord r;
      r.key = i;
      if (q.push(r)) {
        ++i;
      } else {
        std::this_thread::yield();
      }
    }
  });
  uint64_t next = 0;
  bool in_order = true;
  while (next < kRecords) {
    q.take(64, [&](const LaunchRecord& r) { in_order = in_order && r.key == next++; });
  }
  writer.join();
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace proton::instr
