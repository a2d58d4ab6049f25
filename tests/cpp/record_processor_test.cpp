#include "attribution/record_processor.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "attribution/flush_policy.h"

#include "test_util.h"

namespace proton {
namespace {

struct Delivery {
  SessionMask sessions;
  uint64_t correlation;
  ContextId context;
  uint32_t flags;
};

class RecordingSink : public RecordSink {
 public:
  void deliver(SessionMask sessions, const Record& record) override {
    kinds.emplace_back(record.index(), sessions);
    if (const auto* lost = std::get_if<RecordsLost>(&record)) dropped_total += lost->count;
    if (const auto* k = std::get_if<KernelDone>(&record))
      got.push_back({sessions, k->kernel.correlation, k->tag.context, k->tag.flags});
  }
  std::vector<Delivery> got;
  uint64_t dropped_total = 0;
  std::vector<std::pair<size_t, SessionMask>> kinds;  // every delivery: its kind and sessions
};

KernelRecord record(uint64_t correlation) {
  KernelRecord r;
  r.correlation = correlation;
  r.start_ns = 10;
  r.end_ns = 20;
  r.name = testing::id("k");
  return r;
}

/// An unattributed record's flags: the unattributed bit and the epoch it was delivered in (the
/// process-wide phase epoch, which earlier tests of this binary may have advanced).
void expect_unattributed_now(const Delivery& d) {
  EXPECT_EQ(d.flags & ~(kTagEpochMask << kTagEpochShift), kTagUnattributed);
  EXPECT_EQ((d.flags >> kTagEpochShift) & kTagEpochMask,
            LaunchStage::phase_epoch.load() & kTagEpochMask);
}

class Processor : public ::testing::Test {
 protected:
  void SetUp() override {
    LaunchStage::drain([](const LaunchTag&) {});
    LaunchStage::active_sessions = 1;
  }
  void TearDown() override { LaunchStage::active_sessions = 0; }
  testing::MainThreadFixture main_;
  RecordingSink sink_;
  RecordProcessor proc_{sink_};
};

TEST_F(Processor, RecordsGoToTheContextOfTheirLaunch) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(testing::id("a"));
  LaunchStage::tag(1);
  tc.exit_scope(testing::id("a"));
  tc.enter_scope(testing::id("b"));
  LaunchStage::tag(2);
  tc.exit_scope(testing::id("b"));
  std::vector<KernelRecord> batch = {record(2), record(1)};  // completion order differs
  proc_.process(batch);
  ASSERT_EQ(sink_.got.size(), 2u);
  EXPECT_EQ(testing::path_of(sink_.got[0].context), "b");
  EXPECT_EQ(testing::path_of(sink_.got[1].context), "a");
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
}

TEST_F(Processor, SessionsAreThoseActiveAtLaunchTime) {
  LaunchStage::active_sessions = 0b11;
  LaunchStage::tag(5);
  LaunchStage::active_sessions = 0b10;
  std::vector<KernelRecord> batch = {record(5)};
  proc_.process(batch);
  ASSERT_EQ(sink_.got.size(), 1u);
  EXPECT_EQ(sink_.got[0].sessions, 0b11u);
}

TEST_F(Processor, UnknownCorrelationWaitsOneBatchThenGoesToRoot) {
  std::vector<KernelRecord> first = {record(99)};
  proc_.process(first);
  EXPECT_TRUE(sink_.got.empty());
  EXPECT_EQ(proc_.stats().waiting, 1u);
  proc_.process({});
  ASSERT_EQ(sink_.got.size(), 1u);
  EXPECT_EQ(sink_.got[0].context, kRootContext);
  expect_unattributed_now(sink_.got[0]);
  EXPECT_EQ(proc_.stats().unattributed, 1u);
}

TEST_F(Processor, AKernelThatStartedWhilePausedIsDroppedAfterTheResumeToo) {
  // Launched while every session was paused (no tag), its record processed after a session
  // resumed: it must not land at the root of the resumed session.
  proc_.paused(100);
  proc_.resumed(200);
  KernelRecord during = record(40);
  during.start_ns = 150;
  KernelRecord after = record(41);
  after.start_ns = 250;
  KernelRecord before = record(42);
  before.start_ns = 50;
  std::vector<KernelRecord> batch = {during, after, before};
  proc_.process(batch);
  proc_.settle();
  ASSERT_EQ(sink_.got.size(), 2u);
  EXPECT_EQ(sink_.got[0].correlation, 41u);
  EXPECT_EQ(sink_.got[1].correlation, 42u);
  EXPECT_EQ(proc_.stats().unattributed, 2u);
  // Still paused: anything that started since is dropped.
  proc_.paused(300);
  KernelRecord late = record(43);
  late.start_ns = 10'000;
  std::vector<KernelRecord> second = {late};
  proc_.process(second);
  proc_.settle();
  EXPECT_EQ(sink_.got.size(), 2u);
}

TEST_F(Processor, LateTagIsFoundOnRetry) {
  std::vector<KernelRecord> first = {record(7)};
  proc_.process(first);
  ThreadContext::current().enter_scope(testing::id("late"));
  LaunchStage::tag(7);
  ThreadContext::current().exit_scope(testing::id("late"));
  proc_.process({});
  ASSERT_EQ(sink_.got.size(), 1u);
  EXPECT_EQ(testing::path_of(sink_.got[0].context), "late");
  EXPECT_EQ(proc_.stats().unattributed, 0u);
}

TEST_F(Processor, SettleAttributesWaitingRecords) {
  std::vector<KernelRecord> first = {record(123)};
  proc_.process(first);
  proc_.settle();
  ASSERT_EQ(sink_.got.size(), 1u);
  expect_unattributed_now(sink_.got[0]);
  EXPECT_EQ(proc_.stats().waiting, 0u);
}

TEST_F(Processor, OneLaunchFansOutToSeveralKernels) {
  LaunchStage::tag(10, 3);
  std::vector<KernelRecord> batch = {record(10), record(10)};
  proc_.process(batch);
  EXPECT_EQ(proc_.stats().pending_tags, 1u);
  std::vector<KernelRecord> last = {record(10)};
  proc_.process(last);
  EXPECT_EQ(sink_.got.size(), 3u);
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
}

TEST_F(Processor, UnknownFanOutIsKeptUntilForgotten) {
  LaunchStage::tag(11, 0);
  std::vector<KernelRecord> batch(5, record(11));
  proc_.process(batch);
  EXPECT_EQ(sink_.got.size(), 5u);
  EXPECT_EQ(proc_.stats().pending_tags, 1u);
  proc_.settle(/*forget_open_tags=*/true);
  EXPECT_EQ(proc_.stats().pending_tags, 0u);
}

// A finalized session's slot may be reused: kernels of launches it tagged (a graph replay
// still running, say) must not reach the next session in that slot.
TEST_F(Processor, AForgottenSessionGetsNoKernelsOfItsOpenTags) {
  LaunchStage::active_sessions = 0b11;
  LaunchStage::tag(21, 0);  // unknown fan-out: stays open
  LaunchStage::tag(22);     // staged, not yet drained
  proc_.forget_session(0);
  std::vector<KernelRecord> batch = {record(21), record(22), record(21)};
  proc_.process(batch);
  ASSERT_EQ(sink_.got.size(), 3u);
  for (const Delivery& d : sink_.got)
    EXPECT_EQ(d.sessions, 0b10u) << d.correlation;
}

TEST_F(Processor, HeldTagsCountsStagedLaunchesUntilTheirKernelsCome) {
  LaunchStage::tag(31);
  LaunchStage::tag(32, 2);
  EXPECT_EQ(proc_.stats().pending_tags, 0u);  // still staged on this thread
  EXPECT_EQ(proc_.held_tags(), 2u);           // drained by the question
  std::vector<KernelRecord> batch = {record(31), record(32)};
  proc_.process(batch);
  EXPECT_EQ(proc_.held_tags(), 1u);  // 32 expects one more kernel
  batch = {record(32)};
  proc_.process(batch);
  EXPECT_EQ(proc_.held_tags(), 0u);
}

TEST(FlushPolicy, FlushesOnlyWhenTagsPileUpOrWaitTooLong) {
  FlushPolicy p;  // 8192 tags, 200 ms
  const uint64_t ms = 1'000'000;
  EXPECT_FALSE(p.due(0, 10'000 * ms, 0));       // nothing held: never
  EXPECT_FALSE(p.due(100, 50 * ms, 0));         // a few tags, a buffer came recently
  EXPECT_FALSE(p.due(8191, 199 * ms, 0));       // just under both limits
  EXPECT_TRUE(p.due(8192, 1 * ms, 0));          // the tag limit
  EXPECT_TRUE(p.due(1, 1200 * ms, 1000 * ms));  // quiet for 200 ms with a tag held
  EXPECT_FALSE(p.due(1, 1100 * ms, 1000 * ms));
  EXPECT_FALSE(p.due(1, 5 * ms, 10 * ms));  // a clock read before the last delivery
  p.tag_limit = 0;                          // the old behaviour: every check
  EXPECT_TRUE(p.due(1, 0, 0));
  EXPECT_FALSE(p.due(0, 0, 0));
}

TEST_F(Processor, DroppedRecordsAreCountedAndReported) {
  proc_.report_dropped(0);
  proc_.report_dropped(12);
  proc_.report_dropped(3);
  EXPECT_EQ(sink_.dropped_total, 15u);
  EXPECT_EQ(proc_.stats().dropped, 15u);
}

// Every kind reaches the sink through its one entry point, as a reference to the batch the
// backend made (no copy): PC and counter batches for every session that collects them, lost
// records for the sessions active now.
TEST_F(Processor, EveryKindReachesTheSinkThroughOneEntryPoint) {
  PcSampleBatch pc;
  CounterSamples samples;
  LaunchCounters values;
  const PcSampleBatch* handed = nullptr;
  class Check final : public RecordSink {
   public:
    explicit Check(const PcSampleBatch*& out) : out_(out) {}
    void deliver(SessionMask, const Record& record) override {
      if (const auto* p = std::get_if<PcSamples>(&record)) out_ = &p->batch;
    }
    const PcSampleBatch*& out_;
  } check(handed);
  RecordProcessor(check).deliver(PcSamples{pc});
  EXPECT_EQ(handed, &pc);

  LaunchStage::active_sessions = 0b101;
  proc_.deliver(PcSamples{pc});
  proc_.report_dropped(4);
  proc_.deliver(CounterSampleBatch{samples});
  proc_.deliver(LaunchCounterValues{values}, SessionMask{0b10});
  using Kind = std::pair<size_t, SessionMask>;
  EXPECT_EQ(sink_.kinds,
            (std::vector<Kind>{{Record(PcSamples{pc}).index(), kAllSessions},
                               {Record(RecordsLost{4}).index(), 0b101},
                               {Record(CounterSampleBatch{samples}).index(), kAllSessions},
                               {Record(LaunchCounterValues{values}).index(), 0b10}}));
}

}  // namespace
}  // namespace proton
