#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

class Sessions : public testing::RuntimeFixture {
 protected:
  Sessions() : RuntimeFixture("proton_session_test_", 1000) {}
};

TEST_F(Sessions, KernelsLandUnderTheirScopes) {
  SessionId s = rt_.start(config("p"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("model"));
  launch("gemm", 100);
  launch("gemm", 50);
  tc.set_state(id("decode"));
  launch("gemm", 10);
  tc.set_state(kNoName);
  tc.exit_scope(id("model"));
  launch("copy", 7);
  rt_.finalize(s, "");
  json j = read("p");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  const json& root = j[0];
  EXPECT_EQ(root["frame"]["name"], "ROOT");
  EXPECT_EQ(root["metrics"]["time (ns)"], 0);
  const json* model = child(root, "model");
  ASSERT_NE(model, nullptr);
  const json* gemm = child(*model, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ((*gemm)["metrics"]["time (ns)"], 150);
  EXPECT_EQ((*gemm)["metrics"]["count"], 2);
  EXPECT_EQ((*gemm)["metrics"]["device_id"], "0");
  EXPECT_EQ((*gemm)["metrics"]["device_type"], "CUDA");
  const json* decode = child(*model, "decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ((*child(*decode, "gemm"))["metrics"]["count"], 1);
  EXPECT_EQ((*child(root, "copy"))["metrics"]["time (ns)"], 7);
  EXPECT_EQ(j[1]["CUDA"]["0"]["arch"], "90");
  EXPECT_EQ(j[1]["CUDA"]["0"]["num_sms"], 132);
  EXPECT_FALSE(rt_.has_sessions());
  EXPECT_EQ(log_.stops, 1);
}

TEST_F(Sessions, DeactivatedSessionsMissKernels) {
  SessionId a = rt_.start(config("a"));
  SessionId b = rt_.start(config("b"));
  EXPECT_NE(a, b);
  launch("both", 1);
  rt_.deactivate(a, /*flush=*/true);
  EXPECT_FALSE(rt_.is_active(a));
  launch("only_b", 1);
  rt_.deactivate(b, false);
  EXPECT_EQ(log_.pauses, 1);
  launch("none", 1);
  int resumes = log_.resumes;
  rt_.activate(a);
  EXPECT_EQ(log_.resumes, resumes + 1);
  launch("only_a", 1);
  rt_.finalize_all("");
  json ja = read("a"), jb = read("b");
  EXPECT_NE(child(ja[0], "both"), nullptr);
  EXPECT_NE(child(jb[0], "both"), nullptr);
  EXPECT_EQ(child(ja[0], "only_b"), nullptr);
  EXPECT_NE(child(jb[0], "only_b"), nullptr);
  EXPECT_EQ(child(ja[0], "none"), nullptr);
  EXPECT_EQ(child(jb[0], "none"), nullptr);
  EXPECT_NE(child(ja[0], "only_a"), nullptr);
  EXPECT_EQ(child(jb[0], "only_a"), nullptr);
}

TEST_F(Sessions, AKernelLaunchedWhilePausedStaysOutAfterTheResume) {
  // A paused backend tags no launch: the kernel's record comes untagged, and here only after a
  // session resumed. It started inside the pause, so it is nobody's, not the root's.
  SessionId s = rt_.start(config("paused"));
  launch("before", 1);
  rt_.deactivate(s, /*flush=*/true);
  KernelRecord r;
  r.correlation = ++correlation_;
  r.start_ns = fake_->timestamp_ns();
  r.end_ns = r.start_ns + 5;
  r.name = id("while_paused");
  fake_->complete(r);
  rt_.activate(s);
  fake_->flush();  // the record thread's flushes: the record, then its retry without a tag
  fake_->flush();
  launch("after", 1);
  rt_.finalize_all("");
  json j = read("paused");
  EXPECT_NE(child(j[0], "before"), nullptr);
  EXPECT_NE(child(j[0], "after"), nullptr);
  EXPECT_EQ(child(j[0], "while_paused"), nullptr) << j.dump();
}

TEST_F(Sessions, StartingTheSamePathReactivates) {
  SessionId s = rt_.start(config("same"));
  rt_.deactivate(s, false);
  EXPECT_EQ(rt_.start(config("same")), s);
  EXPECT_TRUE(rt_.is_active(s));
}

TEST_F(Sessions, ScopeMetricsGoToCurrentContextOfActiveSessions) {
  SessionId s = rt_.start(config("m"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("load"));
  std::vector<std::pair<NameId, MetricValue>> m = {{id("bytes"), int64_t{64}}};
  rt_.add_metrics(m);
  rt_.add_metrics(m);
  std::vector<std::pair<NameId, MetricValue>> bad = {{id("bytes"), std::vector<int64_t>{1}}};
  EXPECT_THROW(rt_.add_metrics(bad), MetricTypeError);
  tc.exit_scope(id("load"));
  rt_.finalize(s, "hatchet");
  json j = read("m");
  EXPECT_EQ((*child(j[0], "load"))["metrics"]["bytes"], 128);
  EXPECT_EQ(j[1], json::object());  // no kernels, no devices
}

TEST_F(Sessions, ErrorsAreClear) {
  EXPECT_THROW(rt_.activate(63), SessionNotFound);
  EXPECT_THROW(rt_.finalize(7, ""), SessionNotFound);
  SessionConfig bad = config("x");
  bad.context = "weird";
  EXPECT_THROW(rt_.start(bad), std::invalid_argument);
  SessionConfig nowhere;
  nowhere.name = (dir_ / "missing" / "p").string();
  try {
    rt_.start(nowhere);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST_F(Sessions, BadFormatKeepsTheSession) {
  SessionId s = rt_.start(config("keep"));
  launch("k", 3);
  EXPECT_THROW(rt_.finalize(s, "xml"), std::invalid_argument);
  EXPECT_TRUE(rt_.has_sessions());
  rt_.finalize(s, "");
  EXPECT_EQ((*child(read("keep")[0], "k"))["metrics"]["count"], 1);
}

TEST_F(Sessions, HatchetJsonFlushesFirst) {
  SessionId s = rt_.start(config("live"));
  launch("k", 5);
  json j = json::parse(rt_.hatchet_json(s));
  EXPECT_EQ((*child(j[0], "k"))["metrics"]["time (ns)"], 5);
}

// The record thread holds the session list for a whole batch (Runtime::begin_batch) while
// user threads start and finalize other sessions: no batch may see a session half gone, and
// the session that stays must get every kernel. Run under TSan and ASan by CI.
TEST_F(Sessions, RecordThreadDeliversWhileSessionsComeAndGo) {
  SessionId keep = rt_.start(config("keep"));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> delivered{0};
  std::thread record_thread([&] {
    NameId name = id("k");
    std::vector<KernelRecord> batch;
    for (uint64_t correlation = 50'000'000; !stop.load();) {
      batch.clear();
      for (int i = 0; i < 64; ++i) {
        LaunchStage::tag(++correlation);
        KernelRecord r;
        r.correlation = correlation;
        r.start_ns = 1000;
        r.end_ns = 1001;
        r.name = name;
        batch.push_back(r);
      }
      rt_.processor().process(batch);
      delivered += batch.size();
      // Buffers come some time apart, as CUPTI's do; a writer (start/finalize) waits for the
      // batch in progress, and glibc's rwlock lets new readers in while a writer waits.
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  while (delivered.load() == 0)
    std::this_thread::yield();
  for (int i = 0; i < 30; ++i) {
    SessionId s = rt_.start(config("churn" + std::to_string(i)));
    launch("main", 1);
    rt_.finalize(s, "");
  }
  stop = true;
  record_thread.join();
  rt_.finalize(keep, "");
  json tree = read("keep");
  const json* k = child(tree[0], "k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ((*k)["metrics"]["count"], delivered.load());
}

TEST_F(Sessions, IdsCountUpAndAreNeverReused) {
  SessionId a = rt_.start(config("a"));
  rt_.finalize(a, "");
  SessionId b = rt_.start(config("b"));
  SessionId c = rt_.start(config("c"));
  EXPECT_EQ(b, a + 1);
  EXPECT_EQ(c, a + 2);
  rt_.finalize(b, "");
  EXPECT_EQ(rt_.start(config("d")), c + 1);  // b's slot is free again, its id is not
  EXPECT_FALSE(rt_.is_active(a));
  EXPECT_TRUE(rt_.is_active(c));
}

TEST_F(Sessions, DeadIdsThrowSessionNotFound) {
  SessionId s = rt_.start(config("gone"));
  rt_.finalize(s, "");
  SessionId live = rt_.start(config("live"));  // takes the dead session's slot
  for (SessionId id : {s, SessionId{4242}}) {
    std::string want = "Session has not been initialized: " + std::to_string(id);
    auto expect = [&](auto&& call) {
      try {
        call();
        ADD_FAILURE() << "no exception for " << id;
      } catch (const SessionNotFound& e) {
        EXPECT_EQ(e.what(), want);
      }
    };
    expect([&] { rt_.activate(id); });
    expect([&] { rt_.deactivate(id, false); });
    expect([&] { rt_.finalize(id, ""); });
    expect([&] { rt_.hatchet_json(id); });
    expect([&] { rt_.advance_phase(id); });
    expect([&] { rt_.is_phase_complete(id, 0); });
    expect([&] { rt_.clear_phase(id, 0, false); });
  }
  EXPECT_TRUE(rt_.is_active(live));  // nothing reached the session in the reused slot
}

TEST_F(Sessions, MetricsAddedToOneSessionById) {
  SessionId a = rt_.start(config("a"));
  SessionId b = rt_.start(config("b"));
  std::vector<std::pair<NameId, MetricValue>> m = {{id("n"), int64_t{2}}};
  EXPECT_TRUE(rt_.add_metrics_to(b, kRootContext, kRootContext, m));
  EXPECT_FALSE(rt_.add_metrics_to(b + 100, kRootContext, kRootContext, m));
  EXPECT_EQ(rt_.active_session_ids(), (std::vector<SessionId>{a, b}));
  rt_.finalize(a, "");
  rt_.finalize(b, "");
  EXPECT_FALSE(read("a")[0]["metrics"].contains("n"));
  EXPECT_EQ(read("b")[0]["metrics"]["n"], 2);
}

}  // namespace
}  // namespace proton
