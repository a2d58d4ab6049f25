// Windows over the real runtime and a fake backend: each window its own profile with a unique
// name, the step range on the root, warm-up thrown away, no session (so no backend) between.
#include "control/windows.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <vector>

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

TEST_F(Windows, APhasedScheduleWritesItsWindowsAsPhasesOfOneProfile) {
  // wait=1, warmup=1, active=2, repeat=3: steps 1, 5, 9 warm up; 2-3, 6-7, 10-11 are kept.
  wc_.set_schedule({.wait = 1, .warmup = 1, .active = 2, .repeat = 3, .phases = true});
  std::vector<std::string> written;
  for (int i = 0; i < 14; ++i) {
    launch("s" + std::to_string(i), 10);
    if (auto w = wc_.step()) written.push_back(w->path);
    if (i == 3) {                   // step 4 waits
      EXPECT_FALSE(wc_.is_open());  // between windows: the profile waits, paused
      EXPECT_TRUE(rt_.active_session_ids().empty());
    }
  }
  // Written once, when the last window closed: one file per phase, as a session that advanced.
  EXPECT_EQ(written, std::vector<std::string>{(dir_ / "job.w0.part_2.hatchet").string()});
  EXPECT_FALSE(rt_.has_sessions());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w1.hatchet"));
  const int kept[3][2] = {{2, 3}, {6, 7}, {10, 11}};
  for (int p = 0; p < 3; ++p) {
    auto root = read("job.w0.part_" + std::to_string(p))[0];
    EXPECT_EQ(root["frame"]["window"], p);
    EXPECT_EQ(root["frame"]["first_step"], kept[p][0]);
    EXPECT_EQ(root["frame"]["last_step"], kept[p][1]);
    for (int i = 0; i < 14; ++i) {
      const bool in = i >= kept[p][0] && i <= kept[p][1];
      EXPECT_EQ(child(root, "s" + std::to_string(i)) != nullptr, in) << "phase " << p << " s" << i;
    }
  }
  // A second run never overwrites the phased profile.
  EXPECT_EQ(wc_.open().path, (dir_ / "job.w1.hatchet").string());
  wc_.close();
}

TEST_F(Windows, EndingAPhasedScheduleWritesWhatItRecorded) {
  wc_.set_schedule({.wait = 1, .active = 1, .phases = true});  // endless: 1, 3, 5... kept
  for (int i = 0; i < 4; ++i) {
    launch("s" + std::to_string(i), 10);
    EXPECT_FALSE(wc_.step().has_value());
  }
  EXPECT_FALSE(wc_.is_open());                  // step 4 waits: the profile is paused
  EXPECT_THROW(wc_.close(), std::logic_error);  // not a window proton-ctl can stop
  wc_.clear_schedule();
  EXPECT_FALSE(rt_.has_sessions());
  EXPECT_NE(child(read("job.w0.part_0")[0], "s1"), nullptr);
  EXPECT_NE(child(read("job.w0.part_1")[0], "s3"), nullptr);
  EXPECT_EQ(child(read("job.w0.part_1")[0], "s2"), nullptr);
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
  rt_.finalize_all("");  // every session, windows included (the exit path's last resort)
  EXPECT_EQ(wc_.close().path, (dir_ / "job.w0.hatchet").string());
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
}

TEST_F(Windows, FinalizingTheProgramsSessionsLeavesTheWindowRecording) {
  SessionId own = rt_.start(config("own"));
  wc_.open();
  rt_.finalize_all("", /*windows=*/false);  // what proton.finalize() with no id does
  EXPECT_TRUE(std::filesystem::exists(dir_ / "own.hatchet"));
  EXPECT_THROW(rt_.finalize(own, ""), SessionNotFound);  // written and ended
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
  EXPECT_TRUE(rt_.has_sessions());
  launch("after_finalize", 10);
  wc_.close();
  EXPECT_NE(child(read("job.w0")[0], "after_finalize"), nullptr);
}

TEST_F(Windows, PausingAndResumingTheProgramsSessionsLeavesTheWindowAlone) {
  SessionId own = rt_.start(config("own"));
  wc_.open();
  std::vector<SessionId> ids = rt_.active_session_ids();
  ASSERT_EQ(ids.size(), 2u);
  const SessionId window = ids[0] == own ? ids[1] : ids[0];
  rt_.deactivate_all(/*flush=*/false, /*windows=*/false);  // proton.deactivate() with no id
  EXPECT_FALSE(rt_.is_active(own));
  EXPECT_TRUE(rt_.is_active(window));
  launch("while_paused", 10);
  rt_.activate_all(/*windows=*/false);  // proton.activate() with no id
  EXPECT_TRUE(rt_.is_active(own));
  rt_.deactivate(window, /*flush=*/false);  // paused by its controller (or by its own id)
  rt_.activate_all(/*windows=*/false);
  EXPECT_FALSE(rt_.is_active(window));  // stays as its controller left it
  rt_.activate(window);
  wc_.close();
  rt_.finalize(own, "");
  EXPECT_NE(child(read("job.w0")[0], "while_paused"), nullptr);
  EXPECT_EQ(child(read("own")[0], "while_paused"), nullptr);
}

TEST_F(Windows, AFlushPeriodWritesTheOpenWindowWhileItRecords) {
  wc_.configure(config("job"), /*flush_ms=*/5);
  WindowResult w = wc_.open();
  launch("before_flush", 100);
  // The flusher writes on its own thread: wait (no time limit asserted) for a write made
  // after the launch, while the window stays open.
  const uint64_t seen = wc_.flushes();
  while (wc_.flushes() < seen + 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(wc_.is_open());
  ASSERT_TRUE(std::filesystem::exists(w.path));
  EXPECT_NE(child(read("job.w0")[0], "before_flush"), nullptr);
  EXPECT_EQ(read("job.w0")[0]["frame"]["window"], 0);
  launch("after_flush", 100);
  wc_.close();
  const uint64_t at_close = wc_.flushes();
  EXPECT_NE(child(read("job.w0")[0], "after_flush"), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(wc_.flushes(), at_close);  // the flusher ended with the window
}

TEST_F(Windows, AFlushedScheduleNeverWritesItsWarmUp) {
  wc_.configure(config("job"), /*flush_ms=*/2);
  wc_.set_schedule({.warmup = 1, .active = 2});  // step 0 warms up, steps 1-2 are kept
  launch("warm", 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // periods pass in warm-up
  EXPECT_FALSE(std::filesystem::exists(dir_ / "job.w0.hatchet"));
  wc_.step();
  launch("kept", 10);
  const uint64_t seen = wc_.flushes();
  while (wc_.flushes() < seen + 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto flushed = read("job.w0");
  EXPECT_NE(child(flushed[0], "kept"), nullptr);
  EXPECT_EQ(child(flushed[0], "warm"), nullptr);
  EXPECT_EQ(flushed[0]["frame"]["first_step"], 1);
  wc_.clear_schedule();
}

TEST_F(Windows, NoFlushPeriodWritesNothingBeforeTheClose) {
  const uint64_t before = wc_.flushes();
  WindowResult w = wc_.open();
  launch("k", 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(std::filesystem::exists(w.path));
  wc_.close();
  EXPECT_EQ(wc_.flushes(), before);
}

TEST_F(Windows, AFlushPeriodNeedsATree) {
  SessionConfig trace_only = config("job");
  trace_only.data = "trace";
  EXPECT_THROW(wc_.configure(trace_only, 100), std::invalid_argument);
  EXPECT_EQ(wc_.flush_ms(), 0u);  // refused before anything changed
}

TEST_F(Windows, BadScheduleIsRefusedBeforeAnythingChanges) {
  EXPECT_THROW(wc_.set_schedule({.active = 0}), std::invalid_argument);
  EXPECT_FALSE(rt_.has_sessions());
}

}  // namespace
}  // namespace proton::control
