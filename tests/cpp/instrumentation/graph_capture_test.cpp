// Instrumented launches captured into CUDA graphs, on the fake device: a captured launch gets
// memory of its own (never a slice of the ring) and records no event on the capturing stream;
// each launch of an executable graph made from the capture copies the replay's records into the
// ring and decodes them under the capture site; nothing the runtime does while a capture runs
// would invalidate it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/instrumentation/instr_runtime.h"
#include "common/hot.h"
#include "runtime_helpers.h"

namespace proton::instr {
namespace {

using testing::CollectingSink;
using testing::end_session;
using testing::FakeDevice;
using testing::one_region;
using testing::ScratchBuilder;
using testing::start_with_kernel;

constexpr uint64_t kFn = 0xC0DE;
constexpr uint64_t kStream = 7;
constexpr ContextId kSite = 42;
constexpr uint64_t kSession = testing::kSessionOneBit;

/// A launch of `b` on `stream` (its scratch written as the kernel would) and its exit.
uint64_t launch_once(const ScratchBuilder& b, uint64_t stream) {
  return testing::launch(b, kFn, 1, stream, kSite, kSession);
}

class GraphCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    dev = start_with_kernel(&sink, 1, 1 << 20, kFn, b);
    InstrRuntime& rt = InstrRuntime::get();
    rt.graph_room_bytes = 0;
    // As with CUPTI: the launch callback runs the exits and sees graph launches.
    was_on = hot::globals.launch_callbacks_on.load();
    hot::globals.launch_callbacks_on.store(true);
    rt.set_exit_via_callback(true);
  }
  void TearDown() override {
    InstrRuntime& rt = InstrRuntime::get();
    rt.set_exit_via_callback(false);
    hot::globals.launch_callbacks_on.store(was_on);
    hot::this_thread().exit_work = 0;
    rt.graph_room_bytes = 0;
    end_session(1);
  }
  InstrStats stats() { return InstrRuntime::get().stats(); }
  /// Captures one launch of `b` on kStream, instantiated as `exec`; returns its memory.
  uint64_t capture(uint64_t exec) {
    dev->begin_capture(kStream);
    const uint64_t p = launch_once(b, kStream);
    dev->end_capture(kStream);
    InstrRuntime::get().graph_instantiated(FakeDevice::kGraphBase + kStream, exec);
    return p;
  }
  /// One launch of executable graph `exec` on `stream`, as the launch callback reports it.
  void replay(uint64_t exec, uint64_t stream = 11) {
    InstrRuntime::get().graph_launched(exec, stream);
  }
  ScratchBuilder b = one_region();
  CollectingSink sink;
  FakeDevice* dev = nullptr;
  bool was_on = false;
};

TEST_F(GraphCapture, EveryReplayIsDecodedUnderTheCaptureSite) {
  InstrRuntime& rt = InstrRuntime::get();
  const InstrStats before = stats();
  hot::this_thread().exit_work = 0;
  dev->begin_capture(kStream);
  const uint64_t p = rt.alloc(b.bytes().size(), 128, kStream);
  // The exit comes from the launch callback, flagged on the thread's line as for the ring.
  EXPECT_NE(hot::this_thread().exit_work & hot::kExitInstr, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(kFn, kStream, kSite, kSession);
  EXPECT_EQ(dev->records_on_capturing.load(), 0);  // our copy stream never joins the capture
  EXPECT_EQ(dev->copies_on_capturing.load(), 0);
  EXPECT_EQ(dev->unsafe_calls.load(), 0);  // its memory allocated in relaxed mode
  dev->end_capture(kStream);
  rt.graph_instantiated(FakeDevice::kGraphBase + kStream, 77);
  rt.drain();
  EXPECT_TRUE(sink.got.empty());  // captured, not run: nothing until a replay
  for (int i = 0; i < 3; ++i)
    replay(77);
  rt.drain();
  ASSERT_EQ(sink.got.size(), 3u);
  for (const auto& d : sink.got) {
    EXPECT_EQ(d.ctx, kSite);
    EXPECT_EQ(d.sessions, kSession);
    ASSERT_EQ(d.totals.size(), 1u);
    EXPECT_EQ(d.totals[0].count, 1u);
    EXPECT_EQ(d.totals[0].cycles, 10u);
  }
  const InstrStats after = stats();
  EXPECT_EQ(after.graph_launches - before.graph_launches, 1u);
  EXPECT_EQ(after.graph_replays - before.graph_replays, 3u);
  EXPECT_EQ(after.graph_bytes - before.graph_bytes, (b.bytes().size() + 127) / 128 * 128);
  EXPECT_EQ(after.launches - before.launches, 3u);  // each replay as one launch of the ring
  EXPECT_EQ(after.corrupt_ctas, before.corrupt_ctas);
  EXPECT_EQ(hot::this_thread().exit_work & hot::kExitInstr, 0);  // the replays' exits are done
}

TEST_F(GraphCapture, ReplaysReadWhatEachReplayWrote) {
  InstrRuntime& rt = InstrRuntime::get();
  const uint64_t p = capture(78);
  replay(78);
  rt.drain();
  // The next replay's kernel wrote a longer region into the same memory.
  ScratchBuilder longer(2, 256, 2);
  longer.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 45}}, {}});
  std::memcpy(reinterpret_cast<void*>(p), longer.bytes().data(), longer.bytes().size());
  replay(78);
  rt.drain();
  ASSERT_EQ(sink.got.size(), 2u);
  EXPECT_EQ(sink.got[0].totals[0].cycles, 10u);
  EXPECT_EQ(sink.got[1].totals[0].cycles, 35u);
}

TEST_F(GraphCapture, OtherGraphsAndReusedHandlesCopyNothing) {
  InstrRuntime& rt = InstrRuntime::get();
  capture(79);
  replay(80);  // an executable graph without captured launches
  EXPECT_EQ(dev->stream_copies.load(), 0);
  rt.graph_exec_destroyed(79);
  replay(79);  // its handle, now another executable graph's
  EXPECT_EQ(dev->stream_copies.load(), 0);
  // A new executable graph instantiated from a graph of no captured launch under a handle
  // that had some: the old entry goes.
  rt.graph_instantiated(FakeDevice::kGraphBase + kStream, 81);
  rt.graph_instantiated(0x999, 81);
  replay(81);
  EXPECT_EQ(dev->stream_copies.load(), 0);
  rt.drain();
  EXPECT_TRUE(sink.got.empty());
}

TEST_F(GraphCapture, ExecutableGraphsOutliveTheirGraph) {
  // PyTorch destroys the captured graph right after instantiating it.
  InstrRuntime& rt = InstrRuntime::get();
  capture(82);
  rt.graph_destroyed(FakeDevice::kGraphBase + kStream);
  replay(82);
  rt.drain();
  EXPECT_EQ(sink.got.size(), 1u);
}

TEST_F(GraphCapture, ReplaysAfterTheSessionEndedAreNotDelivered) {
  InstrRuntime& rt = InstrRuntime::get();
  capture(83);
  const InstrStats before = stats();
  rt.close(1);
  // The graph outlives the session: its kernel still writes the captured memory at every
  // replay, which must still be there (the sanitizers would see a freed one).
  replay(83);
  rt.open(1, 1 << 20);
  rt.drain();
  EXPECT_TRUE(sink.got.empty());
  EXPECT_EQ(dev->stream_copies.load(), 0);
  EXPECT_EQ(stats().graph_unheard - before.graph_unheard, 1u);
}

TEST_F(GraphCapture, AGraphLaunchedIntoAnotherCaptureCopiesNothing) {
  capture(84);
  const InstrStats before = stats();
  dev->begin_capture(12);
  replay(84, 12);
  dev->end_capture(12);
  EXPECT_EQ(dev->stream_copies.load(), 0);
  EXPECT_EQ(stats().graph_unheard - before.graph_unheard, 1u);
}

TEST_F(GraphCapture, PastTheRoomACapturedLaunchKeepsNoRegionsAndIsCounted) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.graph_room_bytes = 64;  // less than one launch's scratch
  const InstrStats before = stats();
  capture(85);
  EXPECT_EQ(dev->unsafe_calls.load(), 0);  // the discard buffer allocated in relaxed mode too
  replay(85);
  rt.drain();
  EXPECT_TRUE(sink.got.empty());
  EXPECT_EQ(dev->stream_copies.load(), 0);
  EXPECT_EQ(stats().graph_dropped - before.graph_dropped, 1u);
}

TEST_F(GraphCapture, WithoutTheLaunchCallbacksACapturedLaunchIsCountedAsDropped) {
  // Triton's launch-exit hook sees the capture but never the replays.
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_exit_via_callback(false);
  const InstrStats before = stats();
  capture(86);
  replay(86);
  rt.drain();
  EXPECT_TRUE(sink.got.empty());
  EXPECT_EQ(stats().graph_dropped - before.graph_dropped, 1u);
  const auto errors = rt.errors();
  EXPECT_TRUE(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
    return e.find("launch callbacks") != std::string::npos;
  }));
}

TEST_F(GraphCapture, TheLegacyStreamNeverAsksAndOtherStreamsKeepTheRing) {
  InstrRuntime& rt = InstrRuntime::get();
  const InstrStats before = stats();
  launch_once(b, 0);
  EXPECT_EQ(dev->capture_queries.load(), 0);  // the usual launch: no driver query
  launch_once(b, 5);                          // another stream, not capturing
  EXPECT_EQ(dev->capture_queries.load(), 1);
  rt.drain();
  EXPECT_EQ(sink.got.size(), 2u);
  EXPECT_EQ(stats().launches - before.launches, 2u);
  EXPECT_EQ(stats().graph_launches, before.graph_launches);
}

TEST_F(GraphCapture, AStreamThatBeganACaptureAfterItsLaunchesIsNotRecordedOn) {
  InstrRuntime& rt = InstrRuntime::get();
  launch_once(b, 0);  // this thread's queue exists: its first launch registers it under mu_
  rt.drain();
  sink.got.clear();
  const InstrStats before = stats();
  {
    // Held so that the consumer cannot take the launch before the capture begins.
    auto hold = rt.hold_mutex_for_test();
    launch_once(b, 9);
    dev->begin_capture(9);
  }
  rt.drain();
  dev->end_capture(9);
  EXPECT_EQ(dev->records_on_capturing.load(), 0);
  EXPECT_EQ(dev->unsafe_calls.load(), 0);  // the consumer waited in relaxed mode
  EXPECT_GE(dev->context_syncs.load(), 1);
  EXPECT_EQ(stats().capture_syncs - before.capture_syncs, 1u);
  ASSERT_EQ(sink.got.size(), 1u);  // and the launch's regions are there
  EXPECT_EQ(sink.got[0].totals[0].cycles, 10u);
}

}  // namespace
}  // namespace proton::instr
