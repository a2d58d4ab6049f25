// The lock-free executable-graph table the launch callback reads.
#include "attribution/graph_exec_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace proton {
namespace {

uintptr_t handle(size_t i) {
  return 0x7f0000000000ull + i * 0x40;  // what heap pointers to driver objects look like
}

TEST(GraphExecTable, FindsWhatWasSetAndForgetsWhatWasErased) {
  GraphExecTable t(16);
  EXPECT_EQ(t.find(handle(1)), GraphExecTable::kUnknown);
  t.set(handle(1), 100);
  t.set(handle(2), 0);
  EXPECT_EQ(t.find(handle(1)), 100u);
  EXPECT_EQ(t.find(handle(2)), 0u);
  t.set(handle(1), 7);
  EXPECT_EQ(t.find(handle(1)), 7u);
  t.erase(handle(1));
  EXPECT_EQ(t.find(handle(1)), GraphExecTable::kUnknown);
  EXPECT_EQ(t.find(handle(2)), 0u);
  EXPECT_EQ(t.size(), 1u);
  t.clear();
  EXPECT_EQ(t.find(handle(2)), GraphExecTable::kUnknown);
}

TEST(GraphExecTable, GrowsAndSurvivesChurn) {
  GraphExecTable t(16);
  for (size_t i = 0; i < 5000; ++i)
    t.set(handle(i), static_cast<uint32_t>(i));
  for (size_t i = 0; i < 5000; ++i)
    ASSERT_EQ(t.find(handle(i)), i);
  // Instantiate/destroy churn: tombstones must not fill the table.
  for (size_t i = 0; i < 100000; ++i) {
    t.erase(handle(i % 5000));
    t.set(handle(10000 + i), 1);
    t.erase(handle(10000 + i));
    t.set(handle(i % 5000), static_cast<uint32_t>(i % 5000));
  }
  EXPECT_EQ(t.size(), 5000u);
  for (size_t i = 0; i < 5000; ++i)
    ASSERT_EQ(t.find(handle(i)), i);
}

TEST(GraphExecTable, ReadersNeverSeeATornEntryWhileAWriterRebuilds) {
  GraphExecTable t(16);
  t.set(handle(0), 42);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        if (t.find(handle(0)) != 42) bad.fetch_add(1);
        uint32_t v = t.find(handle(7));
        if (v != GraphExecTable::kUnknown && v != 7) bad.fetch_add(1);
      }
    });
  }
  for (size_t i = 1; i < 20000; ++i) {
    t.set(handle(i), static_cast<uint32_t>(i));
    if (i % 3 == 0) t.erase(handle(i));
  }
  stop = true;
  for (auto& th : readers)
    th.join();
  EXPECT_EQ(bad.load(), 0u);
}

}  // namespace
}  // namespace proton
