// hot::this_thread(): one Thread per live thread, found through the thread pointer, given back
// when the thread exits, never handed to another thread with the old owner's state.
#include "common/hot.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace proton::hot {
namespace {

bool in_table(const Thread* t) {
  return t >= thread_slots && t < thread_slots + kThreadSlots;
}

TEST(HotThread, EachThreadGetsItsOwnAndKeepsIt) {
  if (thread_pointer() == 0) GTEST_SKIP() << "no thread-pointer read on this platform";
  constexpr int kThreads = 16;
  std::vector<const Thread*> seen(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Thread& t = this_thread();
      t.pending_op = static_cast<uint32_t>(100 + i);
      ready.fetch_add(1);
      while (ready.load() < kThreads)
        std::this_thread::yield();  // all alive at once
      EXPECT_EQ(&this_thread(), &t);
      EXPECT_EQ(this_thread().pending_op, static_cast<uint32_t>(100 + i));
      seen[i] = &t;
    });
  }
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(std::set<const Thread*>(seen.begin(), seen.end()).size(), size_t{kThreads});
}

TEST(HotThread, ExitGivesTheSlotBackAndANewThreadStartsFresh) {
  if (thread_pointer() == 0) GTEST_SKIP() << "no thread-pointer read on this platform";
  this_thread();  // the test thread's own slot, so it does not count below
  size_t before = claimed_thread_slots();
  const Thread* first = nullptr;
  std::thread([&] {
    Thread& t = this_thread();
    EXPECT_TRUE(in_table(&t));
    EXPECT_EQ(claimed_thread_slots(), before + 1);
    t.pending_op = 7;
    t.attached = true;
    t.nest_depth = 3;
    t.tags.count = 9;
    first = &t;
  }).join();
  EXPECT_EQ(claimed_thread_slots(), before);
  // glibc reuses an exited thread's stack, and so its thread pointer and slot: the next thread
  // most likely lands on the same slot and must not inherit anything.
  std::thread([&] {
    Thread& t = this_thread();
    EXPECT_EQ(t.pending_op, 0u);
    EXPECT_FALSE(t.attached);
    EXPECT_EQ(t.nest_depth, 0u);
    EXPECT_EQ(t.tags.block, nullptr);
    EXPECT_EQ(t.tags.count, 0u);
  }).join();
  EXPECT_NE(first, nullptr);
}

TEST(HotThread, ATakenSlotSendsTheThreadToItsOwnFallback) {
  if (thread_pointer() == 0) GTEST_SKIP() << "no thread-pointer read on this platform";
  std::thread([] {
    Thread& slot = thread_slots[slot_of(thread_pointer())];
    uintptr_t other = 0x1000;  // another thread's pointer hashing to the same slot
    uintptr_t free = 0;
    ASSERT_TRUE(slot.owner.compare_exchange_strong(free, other));
    Thread& mine = this_thread();
    EXPECT_NE(&mine, &slot);
    EXPECT_FALSE(in_table(&mine));
    mine.pending_op = 9;
    EXPECT_EQ(&this_thread(), &mine);
    EXPECT_EQ(this_thread().pending_op, 9u);
    EXPECT_EQ(slot.owner.load(), other);  // never taken over
    slot.owner.store(0);
  }).join();
}

TEST(HotThread, AForkedChildKeepsOnlyItsOwnSlot) {
  if (thread_pointer() == 0) GTEST_SKIP() << "no thread-pointer read on this platform";
  this_thread().pending_op = 5;
  std::atomic<bool> claimed{false}, done{false};
  std::thread other([&] {
    this_thread();
    claimed = true;
    while (!done)
      std::this_thread::yield();
  });
  while (!claimed)
    std::this_thread::yield();
  ASSERT_GE(claimed_thread_slots(), size_t{2});
  pid_t pid = fork();
  if (pid == 0) {
    // Only this thread exists here; its slot and state survive, the other's slot is free.
    bool ok =
        claimed_thread_slots() == 1 && in_table(&this_thread()) && this_thread().pending_op == 5;
    _exit(ok ? 0 : 1);
  }
  done = true;
  other.join();
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  this_thread().pending_op = 0;
}

}  // namespace
}  // namespace proton::hot
