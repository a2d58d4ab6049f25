#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "test_util.h"

namespace proton {
namespace {

using testing::id;
using testing::path_of;

class Context : public ::testing::Test {
 protected:
  testing::MainThreadFixture main_;
  ThreadContext& tc_ = ThreadContext::current();
};

TEST_F(Context, ScopesNestAndUnwind) {
  EXPECT_EQ(ThreadContext::launch_context(), kRootContext);
  tc_.enter_scope(id("a"));
  tc_.enter_scope(id("b"));
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "a/b");
  EXPECT_EQ(tc_.depth(), 2u);
  tc_.exit_scope(id("b"));
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "a");
  tc_.exit_scope(id("a"));
  EXPECT_EQ(ThreadContext::launch_context(), kRootContext);
  EXPECT_EQ(tc_.depth(), 0u);
}

TEST_F(Context, SamePathGivesSameId) {
  tc_.enter_scope(id("x"));
  ContextId first = ThreadContext::launch_context();
  tc_.exit_scope(id("x"));
  tc_.enter_scope(id("x"));
  EXPECT_EQ(ThreadContext::launch_context(), first);
  tc_.exit_scope(id("x"));
}

TEST_F(Context, MismatchedExitIsAnErrorAndKeepsTheStack) {
  tc_.enter_scope(id("outer"));
  EXPECT_THROW(
      {
        try {
          tc_.exit_scope(id("inner"));
        } catch (const std::logic_error& e) {
          EXPECT_STREQ(e.what(), "exit_scope: expected to close scope 'outer' but got 'inner'");
          throw;
        }
      },
      std::logic_error);
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "outer");
  tc_.exit_scope(kNoName);  // unchecked exit
  EXPECT_THROW(tc_.exit_scope(kNoName), std::logic_error);
}

TEST_F(Context, StateIsTheFrameAboveTheKernel) {
  tc_.enter_scope(id("layer"));
  tc_.set_state(id("forward"));
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "layer/forward");
  tc_.enter_scope(id("matmul"));
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "layer/matmul/forward");
  EXPECT_EQ(tc_.depth(), 3u);
  tc_.exit_scope(id("matmul"));
  tc_.set_state(kNoName);
  EXPECT_EQ(path_of(ThreadContext::launch_context()), "layer");
  tc_.exit_scope(id("layer"));
}

TEST_F(Context, ThreadWithoutScopesFollowsMainThread) {
  tc_.enter_scope(id("train"));
  std::string seen_before, seen_after;
  std::thread worker([&] {
    seen_before = path_of(ThreadContext::launch_context());
    tc_.enter_scope(id("step"));  // main moves on while the worker runs
    seen_after = path_of(ThreadContext::launch_context());
  });
  worker.join();
  EXPECT_EQ(seen_before, "train");
  EXPECT_EQ(seen_after, "train/step");
  tc_.exit_scope(id("step"));
  tc_.exit_scope(id("train"));
}

TEST_F(Context, WorkerScopesSitUnderMainScopesAtEntry) {
  tc_.enter_scope(id("epoch"));
  std::string inside, after_exit;
  std::thread worker([&] {
    auto& mine = ThreadContext::current();
    mine.enter_scope(id("loader"));
    inside = path_of(ThreadContext::launch_context());
    mine.exit_scope(id("loader"));
    after_exit = path_of(ThreadContext::launch_context());
  });
  worker.join();
  EXPECT_EQ(inside, "epoch/loader");
  EXPECT_EQ(after_exit, "epoch");
  tc_.exit_scope(id("epoch"));
}

TEST_F(Context, ConcurrentScopesOnManyThreads) {
  constexpr int kThreads = 8, kIters = 2000;
  std::vector<std::thread> threads;
  std::vector<std::string> last(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &last] {
      auto& mine = ThreadContext::current();
      NameId own = id("thread" + std::to_string(t));
      for (int i = 0; i < kIters; ++i) {
        mine.enter_scope(own);
        mine.enter_scope(id("shared"));
        if (i == kIters - 1) last[t] = path_of(ThreadContext::launch_context());
        mine.exit_scope(id("shared"));
        mine.exit_scope(own);
      }
    });
  }
  for (auto& th : threads)
    th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(last[t], "thread" + std::to_string(t) + "/shared");
  }
}

}  // namespace
}  // namespace proton
