#include "attribution/launch_stage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "test_util.h"

namespace proton {
namespace {

using testing::drain_tags;

TEST(ThreadStage, DrainsAcrossBlocksInOrder) {
  ThreadStage stage;
  TagCursor cursor = stage.start(1);
  constexpr uint64_t n = ThreadStage::kBlockTags * 3 + 17;
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < n; ++i) {
    ThreadStage::push(cursor, LaunchTag{i, 0, 0, 0, 0, 1, 0, 0, 0});
    if (i % 1000 == 999) stage.drain([&](const LaunchTag& t) { got.push_back(t.correlation); });
  }
  stage.drain([&](const LaunchTag& t) { got.push_back(t.correlation); });
  ASSERT_EQ(got.size(), n);
  for (uint64_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], i);
}

TEST(ThreadStage, ConcurrentProducerAndConsumerLoseNothing) {
  ThreadStage stage;
  constexpr uint64_t n = 200000;
  std::atomic<bool> done{false};
  std::thread producer([&] {
    TagCursor cursor = stage.start(1);
    for (uint64_t i = 0; i < n; ++i)
      ThreadStage::push(cursor, LaunchTag{i, 0, 0, 0, 0, 1, 0, 0, 0});
    done = true;
  });
  uint64_t expected = 0;
  bool in_order = true;
  auto check = [&](const LaunchTag& t) { in_order = in_order && t.correlation == expected++; };
  while (!done)
    stage.drain(check);
  producer.join();
  stage.drain(check);
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, n);
}

TEST(LaunchStage, TagsCarryContextAndActiveSessions) {
  testing::MainThreadFixture main;
  drain_tags();
  LaunchStage::active_sessions = 0b101;
  ThreadContext::current().enter_scope(testing::id("region"));
  LaunchStage::tag(42);
  ThreadContext::current().exit_scope(testing::id("region"));
  LaunchStage::tag(43, 0);
  LaunchStage::active_sessions = 0;
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 2u);
  EXPECT_EQ(tags[0].correlation, 42u);
  EXPECT_EQ(tags[0].sessions, 0b101u);
  EXPECT_EQ(testing::path_of(tags[0].context), "region");
  EXPECT_EQ(tags[0].fanout, 1u);
  EXPECT_EQ(tags[1].context, kRootContext);
  EXPECT_EQ(tags[1].fanout, 0u);
}

TEST(LaunchStage, ManyThreadsTagConcurrentlyWithDraining) {
  testing::MainThreadFixture main;
  drain_tags();
  constexpr int kThreads = 6;
  constexpr uint64_t kPerThread = 20000;
  std::atomic<int> running{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &running] {
      for (uint64_t i = 0; i < kPerThread; ++i)
        LaunchStage::tag(uint64_t(t) << 32 | i);
      --running;
    });
  }
  std::vector<uint64_t> per_thread(kThreads, 0);
  auto count = [&](const LaunchTag& tag) { ++per_thread[tag.correlation >> 32]; };
  while (running > 0)
    LaunchStage::drain(count);
  for (auto& th : threads)
    th.join();
  LaunchStage::drain(count);  // exited threads: final drain frees their stages
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(per_thread[t], kPerThread) << t;
}

}  // namespace
}  // namespace proton
