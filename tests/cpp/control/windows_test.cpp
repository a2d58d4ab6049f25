// Windows over the real runtime and a fake backend: each window its own profile with a unique
// name, the step range on the root, warm-up thrown away, no session (so no backend) between.
#include "control/windows.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "runtime_fixture.h"

namespace proton::control {
namespace {

class Windows : public testing::RuntimeFixture {
 protected:
  Windows() : RuntimeFixture("proton_windows_", 7'000'000) {}
  void SetUp() override {
    RuntimeFixture::SetUp();
    wc_.reset_for_testing();
    wc_.configure(config("job"));
  }
  void TearDown() override {
    wc_.reset_for_testing();
    RuntimeFixture::TearDown();
  }
  WindowController& wc_ = WindowController::get();
};

TEST_F(Windows, EachWindowIsItsOwnProfileWithAUniqueName) {
  EXPECT_FALSE(rt_.has_sessions());  // idle: no session, so no backend
  WindowResult first = wc_.open();
  EXPECT_EQ(first.path, (dir_ / "job.w0.hatchet").string());
  EXPECT_TRUE(rt_.has_sessions());
  launch("first_kernel", 100);
  EXPECT_EQ(wc_.close().path, first.path);
  EXPECT_FALSE(rt_.has_sessions());
  launch("between", 100);  // no window: recorded nowhere
  wc_.open();
  launch("second_kernel", 100);
  EXPECT_EQ(wc_.close().path, (dir_ / "job.w1.hatchet").string());
  auto w0 = read("job.w0");
  auto w1 = read("job.w1");
  EXPECT_NE(child(w0[0], "first_kernel"), nullptr);
  EXPECT_EQ(child(w0[0], "second_kernel"), nullptr);
  EXPECT_NE(child(w1[0], "second_kernel"), nullptr);
  EXPECT_EQ(child(w1[0], "between"), nullptr);
  EXPECT_EQ(w0[0]["frame"]["window"], 0);
  EXPECT_EQ(w1[0]["frame"]["window"], 1);
  EXPECT_EQ(wc_.windows_written(), 2u);
}

TEST_F(Windows, NeverOverwritesAnEarlierRunsWindow) {
  std::ofstream(dir_ / "job.w0.hatchet") << "earlier";
  std::ofstream(dir_ / "job.w1.chrome_trace") << "earlier";
  EXPECT_EQ(wc_.open().path, (dir_ / "job.w2.hatchet").string());
  wc_.close();
  std::ifstream in(dir_ / "job.w0.hatchet");
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "earlier");
}

TEST_F(Windows, ANamedWindowKeepsTheNumbering) {
  EXPECT_EQ(wc_.open((dir_ / "other").string()).path, (dir_ / "other.w0.hatchet").string());
  wc_.close();
  EXPECT_EQ(wc_.open().path, (dir_ / "job.w1.hatchet").string());
  wc_.close();
}

TEST_F(Windows, OneWindowAtATime) {
  wc_.open();
  EXPECT_THROW(wc_.open(), std::logic_error);
  wc_.close();
  EXPECT_THROW(wc_.close(), std::logic_error);
  wc_.reset_for_testing();
  EXPECT_THROW(wc_.open(), std::logic_error);  // nothing configured
}

TEST_F(Windows, ScheduleWritesOneProfilePerActiveWindowWithItsSteps) {
  // wait=1, warmup=1, active=2, repeat=2: steps 1 and 5 warm up, 2-3 and 6-7 are kept.
  wc_.set_schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 2});
  const char* kernels[] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
  int written = 0;
  for (const char* k : kernels) {
    launch(k, 10);
    if (wc_.step()) ++written;
  }
  EXPECT_EQ(written, 2);
  EXPECT_FALSE(rt_.has_sessions());
  auto w0 = read("job.w0");
  auto w1 = read("job.w1");
  EXPECT_EQ(w0[0]["frame"]["first_step"], 2);
  EXPECT_EQ(w0[0]["frame"]["last_step"], 3);
  EXPECT_EQ(w1[0]["frame"]["first_step"], 6);
  EXPECT_EQ(w1[0]["frame"]["last_step"], 7);
  for (const char* k : {"s0", "s1", "s4", "s5", "s8"})
    EXPECT_EQ(child(w0[0], k), nullptr) << k;
  EXPECT_NE(child(w0[0], "s2"), nullptr);
  EXPECT_NE(child(w0[0], "s3"), nullptr);
  EXPECT_EQ(child(w1[0], "s5"), nullptr);  // warm-up: recorded, then thrown away
  EXPECT_NE(child(w1[0], "s6"), nullptr);
  EXPECT_NE(child(w1[0], "s7"), nullptr);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w2.hatchet"));
}

TEST_F(Windows, ClearingTheScheduleWritesItsOpenWindow) {
  wc_.set_schedule({.active = 3});  // step 0 opens a window
  launch("k", 10);
  EXPECT_TRUE(wc_.is_open());
  wc_.clear_schedule();
  EXPECT_FALSE(wc_.is_open());
  EXPECT_NE(child(read("job.w0")[0], "k"), nullptr);
}

TEST_F(Windows, AForkChildNeverWritesItsParentsWindow) {
  wc_.open();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // what the child's exit hook does
    ::_exit(wc_.close_if_open().has_value() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
  EXPECT_TRUE(wc_.is_open());
  wc_.close();
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
}

TEST_F(Windows, AWindowFinalizedByOthersStillCloses) {
  wc_.open();
  rt_.finalize_all("");  // proton.finalize() of every session
  EXPECT_EQ(wc_.close().path, (dir_ / "job.w0.hatchet").string());
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
}

TEST_F(Windows, BadScheduleIsRefusedBeforeAnythingChanges) {
  EXPECT_THROW(wc_.set_schedule({.active = 0}), std::invalid_argument);
  EXPECT_FALSE(rt_.has_sessions());
}

}  // namespace
}  // namespace proton::control
