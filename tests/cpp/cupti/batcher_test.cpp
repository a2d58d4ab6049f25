// Completed CUPTI buffers through the real processing code: launch callback -> LaunchStage ->
// KernelBatcher -> RecordProcessor -> sink, with synthetic buffers walked by a fake
// cuptiActivityGetNextRecord.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "attribution/record_processor.h"
#include "backends/cupti/cupti_records.h"
#include "backends/cupti/launch_callbacks.h"
#include "common/name_table.h"
#include "fake_cupti.h"
#include "test_util.h"

namespace proton::cupti {
namespace {

using testing::ActivityBuffer;
using testing::kernel;

struct Got {
  uint64_t correlation;
  ContextId context;
  SessionMask sessions;
  std::string name;
  uint64_t duration;
  LaunchFacts launch;
};

class Sink : public RecordSink {
 public:
  void deliver(SessionMask sessions, const Record& record) override {
    if (const auto* lost = std::get_if<RecordsLost>(&record)) dropped_total += lost->count;
    const auto* k = std::get_if<KernelDone>(&record);
    if (k == nullptr) return;
    const KernelRecord& r = k->kernel;
    got.push_back({r.correlation, k->tag.context, sessions,
                   std::string(NameTable::global().name(r.name)), r.end_ns - r.start_ns, r.launch});
  }
  std::vector<Got> got;
  uint64_t dropped_total = 0;
};

void launch(uint32_t correlation) {
  CUpti_CallbackData data{};
  data.correlationId = correlation;
  data.callbackSite = CUPTI_API_ENTER;
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &data);
  data.callbackSite = CUPTI_API_EXIT;
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &data);
}

class Batcher : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_launch_nesting();
    LaunchStage::drain([](const LaunchTag&) {});
    LaunchStage::active_sessions = 1;
    testing::g_fake_dropped = 0;
  }
  void TearDown() override { LaunchStage::active_sessions = 0; }

  /// Launches under scope `name`; returns the context the launch was tagged with.
  ContextId launch_in(const char* name, uint32_t correlation) {
    auto& tc = ThreadContext::current();
    tc.enter_scope(proton::testing::id(name));
    ContextId ctx = ThreadContext::launch_context();
    launch(correlation);
    tc.exit_scope(proton::testing::id(name));
    return ctx;
  }

  proton::testing::MainThreadFixture main_;
  Sink sink_;
  RecordProcessor processor_{sink_};
  KernelBatcher batcher_{testing::fake_next_record, testing::fake_dropped_records};
};

TEST_F(Batcher, KernelsLandInTheContextsThatLaunchedThemWhateverTheirOrder) {
  ContextId a = launch_in("a", 1);
  ContextId b = launch_in("b", 2);
  ContextId c = launch_in("c", 3);
  // Different streams complete out of launch order; a memcpy record sits in between.
  CUpti_ActivityMemcpy6 copy;
  std::memset(&copy, 0, sizeof(copy));
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.correlationId = 99;
  ActivityBuffer buf;
  buf.add(kernel(3, "k3", 100, 130))
      .add(copy)
      .add(kernel(1, "k1", 0, 10))
      .add(kernel(2, "k2", 5, 25));
  BufferStats s = batcher_.deliver(buf.bytes(), buf.size(), processor_);
  EXPECT_EQ(s.records, 4u);
  EXPECT_EQ(s.kernels, 3u);
  EXPECT_EQ(s.end, CUPTI_ERROR_MAX_LIMIT_REACHED);
  std::map<uint64_t, Got> by_corr;
  for (const Got& g : sink_.got)
    by_corr[g.correlation] = g;
  ASSERT_EQ(by_corr.size(), 3u);
  EXPECT_EQ(by_corr[1].context, a);
  EXPECT_EQ(by_corr[2].context, b);
  EXPECT_EQ(by_corr[3].context, c);
  EXPECT_EQ(by_corr[1].name, "k1");
  EXPECT_EQ(by_corr[3].duration, 30u);
  EXPECT_EQ(processor_.stats().unattributed, 0u);
}

TEST_F(Batcher, LaunchFactsTravelWithTheirKernelInTheLibcuptisLayout) {
  launch_in("a", 5);
  launch_in("b", 6);
  CUpti_ActivityKernel10 big = kernel(5, "big", 0, 10);
  big.blockX = 1024;
  big.blockY = big.blockZ = 1;
  big.gridX = big.gridY = big.gridZ = 1;
  big.dynamicSharedMemory = 150000;
  big.clusterX = big.clusterY = big.clusterZ = 1;
  CUpti_ActivityKernel10 spill = kernel(6, "spill", 0, 10);
  spill.blockX = 32;
  spill.blockY = spill.blockZ = 1;
  spill.registersPerThread = 255;
  spill.localMemoryPerThread = 1024;
  ActivityBuffer buf;
  buf.add(big).add(spill);
  KernelBatcher batcher(testing::fake_next_record, testing::fake_dropped_records,
                        kernel_layout_for(130001));
  batcher.deliver(buf.bytes(), buf.size(), processor_);
  ASSERT_EQ(sink_.got.size(), 2u);
  EXPECT_EQ(sink_.got[0].launch.block[0], 1024u);
  EXPECT_EQ(sink_.got[0].launch.dynamic_shared_bytes, 150000u);
  EXPECT_EQ(sink_.got[0].launch.cluster[0], 1u);
  EXPECT_EQ(sink_.got[1].launch.registers_per_thread, 255u);
  EXPECT_EQ(sink_.got[1].launch.local_bytes_per_thread, 1024u);
}

TEST_F(Batcher, RecordsWhoseLaunchComesLaterInAnotherBufferStillAttribute) {
  // A record may arrive before its launch tag is drained (tags of another thread staged late):
  // it waits one batch.
  ActivityBuffer first;
  first.add(kernel(10, "early", 0, 1));
  batcher_.deliver(first.bytes(), first.size(), processor_);
  EXPECT_TRUE(sink_.got.empty());
  ContextId ctx = launch_in("late", 10);
  ActivityBuffer second;
  second.add(kernel(11, "other", 2, 3));
  launch_in("other", 11);
  batcher_.deliver(second.bytes(), second.size(), processor_);
  ASSERT_EQ(sink_.got.size(), 2u);
  EXPECT_EQ(sink_.got[0].correlation, 10u);
  EXPECT_EQ(sink_.got[0].context, ctx);
  EXPECT_EQ(processor_.stats().unattributed, 0u);
}

TEST_F(Batcher, UnknownCorrelationIdsGoToTheRootAndAreCounted) {
  launch_in("known", 20);
  ActivityBuffer buf;
  buf.add(kernel(20, "known_k", 0, 1)).add(kernel(777, "stranger", 0, 1));
  batcher_.deliver(buf.bytes(), buf.size(), processor_);
  processor_.settle();
  ASSERT_EQ(sink_.got.size(), 2u);
  EXPECT_EQ(sink_.got[1].correlation, 777u);
  EXPECT_EQ(sink_.got[1].context, kRootContext);
  EXPECT_EQ(processor_.stats().unattributed, 1u);
}

TEST_F(Batcher, DroppedRecordsReachTheProcessorOncePerReport) {
  testing::g_fake_dropped = 42;
  ActivityBuffer buf;
  buf.add(kernel(30, "k", 0, 1));
  launch_in("s", 30);
  BufferStats s = batcher_.deliver(buf.bytes(), buf.size(), processor_);
  EXPECT_EQ(s.dropped, 42u);
  EXPECT_EQ(sink_.dropped_total, 42u);
  // CUPTI resets its counter when read: the next buffer reports nothing new.
  batcher_.deliver(buf.bytes(), buf.size(), processor_);
  EXPECT_EQ(sink_.dropped_total, 42u);
  EXPECT_EQ(processor_.stats().dropped, 42u);
}

TEST_F(Batcher, DropsAfterTheLastBufferAreReportedByTheFinalRead) {
  // Every buffer lent out until the end: CUPTI counts what it drops after the last buffer came
  // back, and only the read after the final flush reports it.
  ActivityBuffer buf;
  buf.add(kernel(31, "k", 0, 1));
  launch_in("s", 31);
  batcher_.deliver(buf.bytes(), buf.size(), processor_);
  testing::g_fake_dropped = 7;
  EXPECT_EQ(batcher_.report_dropped(processor_), 7u);
  EXPECT_EQ(sink_.dropped_total, 7u);
  EXPECT_EQ(batcher_.report_dropped(processor_), 0u);
  EXPECT_EQ(processor_.stats().dropped, 7u);
}

TEST_F(Batcher, AnIncompleteRecordEndsTheWalk) {
  launch_in("s", 40);
  ActivityBuffer buf;
  buf.add(kernel(40, "done", 0, 1)).add_incomplete().add(kernel(41, "unreachable", 0, 1));
  BufferStats s = batcher_.deliver(buf.bytes(), buf.size(), processor_);
  EXPECT_EQ(s.end, CUPTI_ERROR_INVALID_KIND);
  EXPECT_EQ(s.kernels, 1u);
  ASSERT_EQ(sink_.got.size(), 1u);
  EXPECT_EQ(sink_.got[0].correlation, 40u);
}

TEST_F(Batcher, EmptyBuffersDeliverNothing) {
  BufferStats s = batcher_.deliver(nullptr, 0, processor_);
  EXPECT_EQ(s.records, 0u);
  ActivityBuffer buf;
  s = batcher_.deliver(buf.bytes(), 0, processor_);
  EXPECT_EQ(s.records, 0u);
  EXPECT_TRUE(sink_.got.empty());
}

TEST_F(Batcher, OneGraphLaunchFeedsManyKernels) {
  CUpti_CallbackData data{};
  data.correlationId = 50;
  data.callbackSite = CUPTI_API_ENTER;
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &data);
  data.callbackSite = CUPTI_API_EXIT;
  on_launch_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &data);
  ActivityBuffer buf;
  for (int i = 0; i < 5; ++i) {
    CUpti_ActivityKernel10 k = kernel(50, "node", i, i + 1);
    k.graphId = 3;
    k.graphNodeId = 100 + i;
    buf.add(k);
  }
  batcher_.deliver(buf.bytes(), buf.size(), processor_);
  EXPECT_EQ(sink_.got.size(), 5u);
  EXPECT_EQ(processor_.stats().unattributed, 0u);
}

}  // namespace
}  // namespace proton::cupti
