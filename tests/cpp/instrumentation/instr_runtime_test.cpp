// The instrumentation runtime on a fake device whose memory is host memory: pools, hand-out,
// copy-back, decoding on the consumer thread, overflow, and region totals.
#include "backends/instrumentation/instr_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "backends/instrumentation/region_totals.h"
#include "common/name_table.h"
#include "fake_device.h"
#include "runtime_helpers.h"
#include "scratch_builder.h"

namespace proton::instr {
namespace {

using testing::CollectingSink;
using testing::Delivery;
using testing::end_session;
using testing::Event;
using testing::FakeDevice;
using testing::fresh_runtime;
using testing::kernel_info;
using testing::launch;
using testing::one_region;
using testing::ScratchBuilder;
using testing::start_with_kernel;
using testing::t_fake_context;

/// A sink whose deliveries wait until release(): holds decoder threads (and so their batches'
/// staging) while a test looks at what the runtime does meanwhile.
class HoldingSink final : public RegionSink {
 public:
  /// Holds every delivery, or only those of kernel `only` when given.
  explicit HoldingSink(NameId only = kNoName) : only_(only) {}
  void deliver(uint64_t, ContextId, const KernelInfo& k, const DecodeResult&, uint32_t,
               uint32_t) override {
    std::unique_lock lock(mu);
    ++delivered;
    cv.notify_all();
    if (only_ != kNoName && k.name != only_) return;
    threads.insert(std::this_thread::get_id());
    ++held;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  /// Whether `n` deliveries began within 30 s (a bound, not a timing).
  bool wait_for(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return delivered >= n; });
  }
  /// The same for deliveries held.
  bool wait_held(int n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return held >= n; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::thread::id> threads;  // that delivered a held launch
  bool open = false;
  int delivered = 0, held = 0;

 private:
  NameId only_;
};

/// `n` launches of `bytes` with nothing written, each drained before the next: only the ring
/// moves (the kernel is unknown, so nothing is decoded).
void launch_and_drain(int n, uint64_t function, uint64_t session, uint64_t bytes = 1000) {
  InstrRuntime& rt = InstrRuntime::get();
  for (int i = 0; i < n; ++i) {
    rt.alloc(bytes, 128, 0);
    rt.launch_exit(function, 0, 0, session);
    rt.drain();
  }
}

/// A slice of `bytes` held by another thread between its allocator and its launch's exit, until
/// release() (or the end of the scope).
class HeldSlice {
 public:
  HeldSlice(uint64_t bytes, uint64_t function, uint64_t session)
      : thread_([=, this] {
          uint64_t p = InstrRuntime::get().alloc(bytes, 128, 0);
          std::unique_lock l(m_);
          address_ = p;
          held_ = true;
          cv_.notify_all();
          cv_.wait(l, [&] { return release_; });
          l.unlock();
          InstrRuntime::get().launch_exit(function, 0, 0, session);
        }) {
    std::unique_lock l(m_);
    cv_.wait(l, [&] { return held_; });
  }
  ~HeldSlice() { release(); }
  uint64_t address() const { return address_; }
  void release() {
    {
      std::lock_guard l(m_);
      release_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool held_ = false, release_ = false;
  uint64_t address_ = 0;
  std::thread thread_;
};

/// The ring's hand-out and give-back: a fresh fake device, one session's pool, torn down after.
class Ring : public ::testing::Test {
 protected:
  void open(uint32_t session, uint64_t pool_bytes, uint32_t wait_ms = 0) {
    fresh_runtime(&sink_, wait_ms);
    session_ = session;
    rt.open(session, pool_bytes);
    before = rt.stats();
  }
  void TearDown() override {
    rt.abandon_after_ms = 2000;
    rt.close(session_);
    rt.set_sink(nullptr);
  }
  uint64_t mask() const { return uint64_t{1} << session_; }
  InstrRuntime& rt = InstrRuntime::get();
  InstrStats before;

 private:
  CollectingSink sink_;
  uint32_t session_ = 0;
};

// The pool's device memory is allocated when the session starts on a thread with a GPU
// context (one GPU in sight), so the session's first launch takes the lock-free path; started
// on a thread without one, or with several GPUs in sight (the launches may use another), the
// first launch allocates it, and no way reports an error.
TEST(InstrRuntime, ThePoolIsAllocatedAtTheStartWhenAContextIsCurrent) {
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  FakeDevice* fake = fresh_runtime(&sink);
  ScratchBuilder b = one_region();
  const size_t errors_before = rt.errors().size();
  InstrStats before = rt.stats();
  rt.open(20, 1 << 16);
  EXPECT_EQ(fake->allocs, 1);  // at the start
  rt.register_kernel(0xf18, kernel_info(b));
  launch(b, 0xf18, 3, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(rt.stats().slow_allocs, before.slow_allocs) << "the first launch took the lock";
  EXPECT_EQ(rt.stats().decoded - before.decoded, 3u);
  end_session(20);

  fake = fresh_runtime(&sink);
  fake->no_context = true;
  before = rt.stats();
  rt.open(21, 1 << 16);
  EXPECT_EQ(fake->allocs, 0);  // no context on this thread yet: left to the first launch
  fake->no_context = false;
  rt.register_kernel(0xf18, kernel_info(b));
  launch(b, 0xf18, 3, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(fake->allocs, 1);
  EXPECT_EQ(rt.stats().slow_allocs - before.slow_allocs, 1u);
  EXPECT_EQ(rt.stats().decoded - before.decoded, 3u);
  EXPECT_EQ(rt.stats().overflows, before.overflows);
  EXPECT_EQ(rt.errors().size(), errors_before) << rt.errors().back();
  end_session(21);

  fake = fresh_runtime(&sink);
  fake->devices = 2;
  before = rt.stats();
  rt.open(24, 1 << 16);
  EXPECT_EQ(fake->allocs, 0);  // several GPUs: on the first launch's device
  rt.register_kernel(0xf18, kernel_info(b));
  launch(b, 0xf18, 3, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(fake->allocs, 1);
  EXPECT_EQ(rt.stats().decoded - before.decoded, 3u);
  end_session(24);
}

// With one GPU in sight no launch asks the driver for its thread's context: with CUPTI
// subscribed, cuCtxGetCurrent went through CUPTI's API dispatch and mutex, ~0.5 us a launch.
TEST(InstrRuntime, WithOneGpuALaunchMakesNoDriverCallForItsContext) {
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  FakeDevice* fake = fresh_runtime(&sink);
  ScratchBuilder b = one_region();
  rt.open(26, 1 << 16);
  rt.register_kernel(0xf1c, kernel_info(b));
  const int queries = fake->context_queries.load();
  const InstrStats before = rt.stats();
  launch(b, 0xf1c, 50, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(fake->context_queries.load(), queries);
  EXPECT_EQ(rt.stats().decoded - before.decoded, 50u);
  end_session(26);
}

// A launch that would wake the idle consumer while another thread holds the runtime's mutex
// does not wait for it: the wake is left to a later launch, and the idle consumer finds the
// records by itself when none comes.
TEST(InstrRuntime, ALaunchNeverWaitsForTheMutexToWakeTheConsumer) {
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  fresh_runtime(&sink);
  ScratchBuilder b = one_region();
  rt.open(22, 1 << 16);
  rt.register_kernel(0xf19, kernel_info(b));
  std::atomic<int> step{0};
  std::thread launcher([&] {
    launch(b, 0xf19, 1, 0, 1, ~uint64_t{0});  // a thread's first launch registers its queue
    step = 1;
    while (step != 2)
      std::this_thread::yield();
    launch(b, 0xf19, 2, 0, 1, ~uint64_t{0});
    step = 3;
  });
  while (step != 1)
    std::this_thread::yield();
  rt.drain();  // the consumer is idle again
  const InstrStats before = rt.stats();
  {
    auto held = rt.hold_mutex_for_test();
    step = 2;
    for (int i = 0; i < 2000 && step != 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(step.load(), 3) << "a launch waited for the mutex";
  }
  launcher.join();
  // No drain (it would wake the consumer itself): the idle consumer's own look finds them.
  for (int i = 0; i < 2000 && rt.stats().decoded - before.decoded < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const InstrStats after = rt.stats();
  EXPECT_EQ(after.decoded - before.decoded, 2u);
  EXPECT_GE(after.deferred_wakes - before.deferred_wakes, 1u);
  end_session(22);
}

// One device per pool: a thread with another GPU context current (another device) is handed a
// buffer allocated in its own context, never a slice of the pool (its kernel could not write
// that device's memory); its launches are counted and said, and the pool's launches go on.
TEST(InstrRuntime, ALaunchOnAnotherDeviceGetsABufferOfItsOwn) {
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  FakeDevice* fake = fresh_runtime(&sink);
  fake->devices = 2;  // (with one GPU in sight every launch is on its device: not checked)
  ScratchBuilder b = one_region();
  rt.open(25, 1 << 16);
  rt.register_kernel(0xf1b, kernel_info(b));
  const InstrStats before = rt.stats();
  const size_t errors_before = rt.errors().size();
  launch(b, 0xf1b, 2, 0, 1, ~uint64_t{0});
  std::set<uint64_t> handed;
  std::thread other([&] {
    t_fake_context = 2;
    for (int i = 0; i < 3; ++i) {
      const uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
      handed.insert(p);
      std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
      rt.launch_exit(0xf1b, 0, 1, ~uint64_t{0});
    }
  });
  other.join();
  launch(b, 0xf1b, 2, 0, 1, ~uint64_t{0});
  rt.drain();
  const InstrStats after = rt.stats();
  EXPECT_EQ(after.decoded - before.decoded, 4u);
  EXPECT_EQ(after.other_context_launches - before.other_context_launches, 3u);
  EXPECT_EQ(after.overflows, before.overflows);
  EXPECT_EQ(handed.size(), 1u);  // one buffer for that context, reused
  ASSERT_EQ(fake->alloc_contexts.size(), 2u);
  EXPECT_EQ(fake->alloc_contexts[0], 1u);  // the pool, at the first launch's (context 1)
  EXPECT_EQ(fake->alloc_contexts[1], 2u);  // the other device's buffer, on its thread
  const std::vector<std::string> errors = rt.errors();
  const bool said = std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
    return e.find("another GPU") != std::string::npos;
  });
  EXPECT_TRUE(said || errors_before >= 8);  // the first few errors are kept
  end_session(25);
}

TEST(InstrRuntime, LaunchesAreCopiedBackDecodedAndSummed) {
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  FakeDevice* fake = fresh_runtime(&sink);
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1,
            {{{false, 0, 10}, {false, 1, 20}, {true, 1, 25}, {true, 0, 110}},
             {{false, 0, 10}, {true, 0, 60}}});
  b.add_cta(1, 2, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(0, 1 << 16);
  rt.register_kernel(0xf00, kernel_info(b));
  InstrStats before = rt.stats();
  for (int launch = 0; launch < 20; ++launch) {
    uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
    ASSERT_EQ(p % 128, 0u);
    std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
    rt.launch_exit(0xf00, 0, 42, 0b11);
  }
  rt.drain();
  InstrStats after = rt.stats();
  EXPECT_EQ(after.launches - before.launches, 20u);
  EXPECT_EQ(after.decoded - before.decoded, 20u);
  EXPECT_EQ(after.overflows, before.overflows);
  EXPECT_EQ(fake->allocs, 1);  // one pool, allocated once
  std::lock_guard lock(sink.mu);
  ASSERT_EQ(sink.got.size(), 20u);
  const Delivery& d = sink.got[0];
  EXPECT_EQ(d.sessions, 0b01u);  // only the session with a pool
  EXPECT_EQ(d.ctx, 42u);
  EXPECT_EQ(d.device, 3u);
  ASSERT_EQ(d.totals.size(), 2u);
  EXPECT_EQ(d.totals[0].path.size(), 1u);  // loop
  EXPECT_EQ(d.totals[0].cycles, 100u + 50 + 10);
  EXPECT_EQ(d.totals[0].count, 3u);
  ASSERT_EQ(d.totals[1].path.size(), 2u);  // loop / load
  EXPECT_EQ(NameTable::global().name(d.totals[1].path[1]), "load");
  EXPECT_EQ(d.totals[1].cycles, 5u);
  // Timeline: at 1 GHz a cycle is a ns; each CTA's first clock sits at its init time (1000 ns).
  ASSERT_EQ(d.spans.size(), 4u);
  EXPECT_EQ(d.spans[0].start_ns, 1000u + 10);  // 'load' of warp 0: clock 20, first clock 10
  EXPECT_EQ(d.spans[0].end_ns - d.spans[0].start_ns, 5u);
  EXPECT_EQ(d.spans[3].cta, 1u);
  EXPECT_EQ(d.spans[3].sm, 2u);
  rt.close(0);
  rt.set_sink(nullptr);
}

TEST_F(Ring, FullPoolOverflowsToADiscardSliceAndCounts) {
  open(1, 1024);
  // Another thread's launch holds the whole pool (1024) between its allocator and its exit.
  HeldSlice held(1000, 0x1, mask());
  const uint64_t a = held.address();
  uint64_t c = rt.alloc(1000, 128, 0);  // a still in flight -> discard
  EXPECT_NE(a, 0u);
  EXPECT_NE(c, 0u);
  EXPECT_NE(a, c);
  rt.launch_exit(0x1, 0, 0, mask());         // the discard launch: nothing queued
  uint64_t big = rt.alloc(1 << 20, 128, 0);  // larger than the pool: discard, grown
  EXPECT_NE(big, 0u);
  rt.launch_exit(0x1, 0, 0, mask());
  InstrStats after = rt.stats();
  EXPECT_EQ(after.overflows - before.overflows, 2u);
  EXPECT_GE(after.largest_overflow, uint64_t{1} << 20);  // finalize names it
  EXPECT_EQ(after.launches, before.launches);
  held.release();
  rt.drain();
}

// Several launching threads: a slice handed out and not yet queued (its thread between the
// allocator and the launch's exit) must not be given back by the copy of a later slice queued
// first, or the ring hands it out again while its kernel may still write it.
TEST_F(Ring, ASliceNotYetQueuedIsNeverHandedOutAgain) {
  open(7, 4096);  // four 1024-byte slices; a full pool overflows at once
  HeldSlice held(1000, 0x7, mask());
  const uint64_t a_slice = held.address();
  for (int i = 0; i < 8; ++i) {
    uint64_t p = rt.alloc(1000, 128, 0);
    EXPECT_FALSE(p >= a_slice && p < a_slice + 1024) << "launch " << i << " got thread A's slice";
    rt.launch_exit(0x7, 0, 0, mask());
    rt.drain();
  }
  InstrStats waited = rt.stats();
  EXPECT_GT(waited.overflows - before.overflows, 0u) << "the ring stopped at A's slice";
  EXPECT_EQ(waited.abandoned_slices, before.abandoned_slices);
  held.release();
  rt.drain();
  launch_and_drain(8, 0x7, mask());  // A's launch was copied back: the ring goes round again
  EXPECT_EQ(rt.stats().overflows, waited.overflows);
}

// A thread that ended between the allocator and its launch ran no kernel on its slice: the
// slice is given back as the thread ends, and the ring goes round at once.
TEST_F(Ring, ASliceWhoseThreadEndedIsGivenBack) {
  open(8, 4096);
  std::thread([&] { rt.alloc(1000, 128, 0); }).join();  // no exit, and the thread is gone
  launch_and_drain(12, 0x8, mask());
  InstrStats after = rt.stats();
  EXPECT_EQ(after.overflows, before.overflows);
  EXPECT_EQ(after.abandoned_slices, before.abandoned_slices);
}

// A thread held between the allocator and its launch's exit (it seems stuck) leaves a slice no
// exit queues: once it has held a full ring's tail for abandon_after_ms it is given up and
// counted, and the launch that comes after all is dropped rather than decoded from a slice
// that is another launch's now.
TEST_F(Ring, ASliceHeldTooLongIsGivenUpAndItsLateLaunchDropped) {
  open(8, 4096, /*wait_ms=*/5);
  rt.abandon_after_ms = 20;
  HeldSlice held(1000, 0x8, mask());
  launch_and_drain(31, 0x8, mask());
  const uint64_t overflows_late = rt.stats().overflows;
  launch_and_drain(9, 0x8, mask());
  InstrStats after = rt.stats();
  EXPECT_EQ(after.abandoned_slices - before.abandoned_slices, 1u);
  EXPECT_EQ(after.overflows, overflows_late) << "the ring goes round once it was given up";
  const uint64_t launches = after.launches;
  held.release();
  rt.drain();
  EXPECT_EQ(rt.stats().launches, launches) << "the late launch was queued";
}

// A slice whose launch never reached the driver (it failed in Python between the allocator and
// the launch) is given back at the thread's next allocation: no kernel writes it.
TEST_F(Ring, ASliceTheSameThreadNeverLaunchedIsReused) {
  open(9, 1024);
  uint64_t a = rt.alloc(1000, 128, 0);
  uint64_t b = rt.alloc(1000, 128, 0);  // no exit for a
  EXPECT_EQ(a, b);
  rt.launch_exit(0x9, 0, 0, mask());
  rt.drain();
  EXPECT_EQ(rt.stats().overflows, before.overflows);
}

// Sessions without a timeline get the per-scope sums only (the decoder keeps no samples): the
// same totals as with them.
TEST(InstrRuntime, ATreeOnlySinkGetsSumsWithoutSamples) {
  class TreeOnlySink final : public RegionSink {
   public:
    void deliver(uint64_t, ContextId, const KernelInfo& k, const DecodeResult& d, uint32_t,
                 uint32_t) override {
      std::lock_guard lock(mu);
      samples += d.samples.size();
      for (const RegionTotals& t : region_totals(k, d))
        cycles += t.cycles, count += t.count;
    }
    bool wants_samples(uint64_t) const override { return false; }
    std::mutex mu;
    uint64_t samples = 0, cycles = 0, count = 0;
  };
  TreeOnlySink sink;
  fresh_runtime(&sink);
  InstrRuntime& rt = InstrRuntime::get();
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1,
            {{{false, 0, 10}, {false, 1, 20}, {true, 1, 25}, {true, 0, 110}},
             {{false, 0, 10}, {true, 0, 60}}});
  rt.open(14, 1 << 16);
  rt.register_kernel(0xf10, kernel_info(b));
  InstrStats before = rt.stats();
  launch(b, 0xf10, 3, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(rt.stats().samples - before.samples, 3u * 3);  // regions decoded, kept or not
  end_session(14);
  std::lock_guard lock(sink.mu);
  EXPECT_EQ(sink.samples, 0u);
  EXPECT_EQ(sink.count, 3u * 3);
  EXPECT_EQ(sink.cycles, 3u * (100 + 5 + 50));
}

TEST(InstrRuntime, UnknownKernelIsCountedNotDecoded) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_device_api(std::make_unique<FakeDevice>());
  rt.overflow_wait_ms = 0;
  rt.open(2, 4096);
  InstrStats before = rt.stats();
  rt.alloc(512, 128, 0);
  rt.launch_exit(0xdead, 0, 0, 0b100);
  rt.drain();
  EXPECT_EQ(rt.stats().unknown_kernels - before.unknown_kernels, 1u);
  rt.close(2);
}

TEST(InstrRuntime, AFailedLaunchGivesItsSliceBackUndecoded) {
  // The slice of a launch call that failed may hold an older launch's records (the ring reuses
  // it): decoding it would count that launch twice.
  InstrRuntime& rt = InstrRuntime::get();
  CollectingSink sink;
  fresh_runtime(&sink);
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(5, 1 << 16);
  rt.register_kernel(0xf0c, kernel_info(b));
  InstrStats before = rt.stats();
  uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(0xf0c, 0, 1, ~uint64_t{0}, /*launched=*/false);
  rt.drain();
  InstrStats after = rt.stats();
  EXPECT_EQ(after.failed_launches - before.failed_launches, 1u);
  EXPECT_EQ(after.decoded, before.decoded);
  EXPECT_EQ(after.copy_errors, before.copy_errors);
  {
    std::lock_guard lock(sink.mu);
    EXPECT_TRUE(sink.got.empty());
  }
  // The ring moved on: the next launch is decoded as usual.
  p = rt.alloc(b.bytes().size(), 128, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(0xf0c, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(rt.stats().decoded - before.decoded, 1u);
  rt.close(5);
  rt.set_sink(nullptr);
}

// The ring hands a slice out again once it is copied back, not once it is decoded: a slow
// decode (here a sink that blocks) must not make launches wait for the pool.
TEST(InstrRuntime, SlicesAreFreeOnceCopiedWhileTheDecoderIsBusy) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_device_api(std::make_unique<FakeDevice>());
  HoldingSink sink;
  rt.set_sink(&sink);
  rt.overflow_wait_ms = 500;
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  const uint64_t slice = (b.bytes().size() + 127) / 128 * 128;
  rt.open(12, 2 * slice);  // room for two launches in flight
  rt.register_kernel(0xf0e, kernel_info(b));
  InstrStats before = rt.stats();
  launch(b, 0xf0e, 4, 0, 1, ~uint64_t{0});
  EXPECT_EQ(rt.stats().overflows, before.overflows);  // no launch waited for the decoder
  sink.release();
  rt.drain();
  EXPECT_EQ(rt.stats().decoded - before.decoded, 4u);
  rt.close(12);
  rt.set_sink(nullptr);
}

/// `ctas` CTAs of one warp that each wrote a whole 64 KB segment (64 KB to copy back per CTA).
ScratchBuilder full_segments(uint32_t ctas) {
  ScratchBuilder b(1, 64 << 10, 1);
  std::vector<Event> ev;
  for (uint32_t i = 0; i < (64u << 10) / 16; ++i) {
    ev.push_back({false, 0, 10 * i});
    ev.push_back({true, 0, 10 * i + 5});
  }
  for (uint32_t c = 0; c < ctas; ++c)
    b.add_cta(c, 0, {ev});
  return b;
}

// A timeline of a dense launch grows the decoder's reused result to all its regions; the
// decoder gives that capacity back when it goes idle instead of holding it for the session.
TEST(InstrRuntime, AnIdleDecoderGivesBackADenseLaunchsRegions) {
  CollectingSink sink;  // wants every region (a timeline)
  fresh_runtime(&sink);
  InstrRuntime& rt = InstrRuntime::get();
  ScratchBuilder b = full_segments(20);  // 81,920 regions: 2.6 MB of decoded regions
  rt.open(23, 16 << 20);
  rt.register_kernel(0xf1a, kernel_info(b));
  launch(b, 0xf1a, 1, 0, 1, ~uint64_t{0});
  rt.drain();
  {
    std::lock_guard lock(sink.mu);
    ASSERT_EQ(sink.got.size(), 1u);
    EXPECT_EQ(sink.got[0].spans.size(), 20u * 4096);
  }
  // drain() returns once delivered; the decoder idles right after.
  uint64_t held = UINT64_MAX;
  for (int i = 0; i < 2000; ++i) {
    held = rt.stats().decoder_held_bytes;
    if (held <= rt.decoder_threads * InstrRuntime::kKeptDecodeBytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LE(held, rt.decoder_threads * InstrRuntime::kKeptDecodeBytes);
  end_session(23);
}

// While the first decoder is busy and batches wait, a helper decodes beside it (a launch of a
// region per GEMM step is ~17,000 regions: one thread fell behind the GPU); every launch is
// still delivered once.
TEST(InstrRuntime, AHelperDecodesWhileBatchesWait) {
  HoldingSink sink;
  fresh_runtime(&sink);
  InstrRuntime& rt = InstrRuntime::get();
  ScratchBuilder b = one_region();
  rt.open(13, 1 << 16);
  rt.register_kernel(0xf0f, kernel_info(b));
  InstrStats before = rt.stats();
  // Each launch its own batch: the next waits until the consumer has copied the one before.
  auto launch_one_batch = [&](uint64_t batches) {
    launch(b, 0xf0f, 1, 0, 1, ~uint64_t{0});
    for (int i = 0; i < 30000 && rt.stats().batches - before.batches < batches; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  launch_one_batch(1);
  EXPECT_TRUE(sink.wait_for(1));  // the first decoder holds batch 1
  launch_one_batch(2);            // batch 2 waits: one batch is not yet a backlog
  launch_one_batch(3);            // two wait: a helper takes one
  EXPECT_TRUE(sink.wait_for(2));  // (not an ASSERT: the sink must be released either way)
  {
    std::lock_guard lock(sink.mu);
    EXPECT_EQ(sink.threads.size(), 2u);
  }
  sink.release();
  rt.drain();
  EXPECT_EQ(rt.stats().decoded - before.decoded, 3u);
  {
    std::lock_guard lock(sink.mu);
    EXPECT_EQ(sink.delivered, 3);
  }
  end_session(13);
}

// One batch of big launches (a region per GEMM step copies ~1 MB each) is split among the
// decoders job by job: two threads decode launches of the same batch at once.
TEST(InstrRuntime, HelpersShareOneBatchOfBigLaunches) {
  InstrRuntime& rt = InstrRuntime::get();
  ASSERT_GE(rt.decoder_threads, 2u);
  ScratchBuilder small = one_region();
  ScratchBuilder big = full_segments(12);  // 768 KB of records per launch
  KernelInfo big_info = kernel_info(big);
  big_info.name = NameTable::global().intern("big_steps");
  HoldingSink sink(big_info.name);
  FakeDevice* dev = start_with_kernel(&sink, 18, 64 << 20, 0xf15, small);
  rt.register_kernel(0xf16, big_info);
  const uint64_t helper_bytes = rt.helper_bytes;
  rt.helper_bytes = 1 << 20;
  rt.drain();
  const InstrStats before = rt.stats();
  dev->sync_delay_ms = 100;
  const uint64_t copies = dev->copy_calls;
  launch(small, 0xf15, 1, 0, 1, ~uint64_t{0});  // the consumer copies it (2 x 100 ms)
  for (int i = 0; i < 30000 && dev->copy_calls == copies; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  launch(big, 0xf16, 4, 0, 1, ~uint64_t{0});  // queued meanwhile: the next batch, 3 MB
  dev->sync_delay_ms = 0;
  EXPECT_TRUE(sink.wait_held(2));  // (not an ASSERT: the sink must be released either way)
  {
    std::lock_guard lock(sink.mu);
    EXPECT_GE(sink.threads.size(), 2u);  // three when a second helper came before the first
  }
  sink.release();
  rt.drain();
  const InstrStats after = rt.stats();
  EXPECT_EQ(after.batches - before.batches, 2u);  // the four big launches were one batch
  EXPECT_EQ(after.decoded - before.decoded, 5u);
  {
    std::lock_guard lock(sink.mu);
    EXPECT_EQ(sink.delivered, 5);
  }
  rt.helper_bytes = helper_bytes;
  end_session(18);
}

// Three threads launch at once while every helper joins at the first waiting byte: each launch
// is decoded and delivered exactly once, with every region (the decoders share batches in
// chunks of launches; TSan runs this too).
TEST(InstrRuntime, SharedBatchesDeliverEveryLaunchOnce) {
  CollectingSink sink;
  ScratchBuilder b = full_segments(3);  // 192 KB per launch: two launches per chunk
  start_with_kernel(&sink, 19, 64 << 20, 0xf17, b);
  InstrRuntime& rt = InstrRuntime::get();
  const uint64_t helper_bytes = rt.helper_bytes;
  rt.helper_bytes = 1;
  const InstrStats before = rt.stats();
  constexpr int kThreads = 3, kEach = 20;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] { launch(b, 0xf17, kEach, 0, 1, ~uint64_t{0}); });
  for (auto& t : threads)
    t.join();
  rt.drain();
  EXPECT_EQ(rt.stats().decoded - before.decoded, uint64_t{kThreads * kEach});
  uint64_t count = 0, cycles = 0;
  {
    std::lock_guard lock(sink.mu);
    EXPECT_EQ(sink.got.size(), size_t{kThreads * kEach});
    for (const Delivery& d : sink.got)
      for (const RegionTotals& t : d.totals) {
        count += t.count;
        cycles += t.cycles;
      }
  }
  const uint64_t regions = uint64_t{kThreads * kEach} * 3 * ((64u << 10) / 16);
  EXPECT_EQ(count, regions);
  EXPECT_EQ(cycles, regions * 5);
  rt.helper_bytes = helper_bytes;
  end_session(19);
}

// A launch takes the mutex to wake the consumer only when it sleeps with nothing queued (or a
// batch is full, or the pool half full): never while it copies a batch, when it holds the
// mutex to take the next one (launches blocked on it once per batch).
TEST(InstrRuntime, LaunchesDoNotWakeABusyConsumer) {
  CollectingSink sink;
  ScratchBuilder b = one_region();
  FakeDevice* dev = start_with_kernel(&sink, 15, 1 << 20, 0xf11, b);
  InstrRuntime& rt = InstrRuntime::get();
  rt.drain();
  dev->sync_delay_ms = 200;
  const InstrStats first = rt.stats();
  launch(b, 0xf11, 1, 0, 1, ~uint64_t{0});  // the consumer takes it and copies (200 ms)
  // It gathers for 3 ms, then copies. (Were it still gathering, no launch would wake it
  // either: the check below cannot fail for want of time.)
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  const InstrStats before = rt.stats();
  launch(b, 0xf11, 3, 0, 1, ~uint64_t{0});  // while it copies: queued, no wake
  const InstrStats during = rt.stats();
  dev->sync_delay_ms = 0;
  rt.drain();
  EXPECT_EQ(during.wakes - before.wakes, 0u);
  EXPECT_EQ(rt.stats().decoded - first.decoded, 4u);
  end_session(15);
}

// Pinning host memory takes the driver for milliseconds and freeing it synchronizes the
// device: the copy-back pins one arena for all batches in flight, replaces it by a
// larger one only for a batch that does not fit alone, and frees the old one only once no
// session runs.
TEST(InstrRuntime, TheStagingArenaIsPinnedOnceAndFreedOnlyWhenNoSessionRuns) {
  CollectingSink sink;
  FakeDevice* dev = fresh_runtime(&sink);
  InstrRuntime& rt = InstrRuntime::get();
  // 1.3 MB, then 5 MB to stage, in a 4 MB arena (small, so that sanitizer builds stay quick)
  ScratchBuilder small = full_segments(20), large = full_segments(80);
  rt.staging_first_bytes = 4 << 20;
  const InstrStats before = rt.stats();
  rt.open(16, 64 << 20);
  // Pinned with the pool, at the session's start: before any kernel of it runs, not by the
  // consumer while the program launches.
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 1u);
  rt.register_kernel(0xf12, kernel_info(small));
  rt.register_kernel(0xf13, kernel_info(large));
  launch(small, 0xf12, 1, 0, 1, ~uint64_t{0});
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 1u);
  rt.drain();
  for (int i = 0; i < 2; ++i) {
    launch(small, 0xf12, 1, 0, 1, ~uint64_t{0});
    rt.drain();
  }
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 1u);  // pinned once
  launch(large, 0xf13, 1, 0, 1, ~uint64_t{0});  // does not fit alone: a larger arena
  rt.drain();
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 2u);
  EXPECT_EQ(dev->pinned_frees.load(), 0) << "freed while a session runs";
  launch(large, 0xf13, 1, 0, 1, ~uint64_t{0});  // fits now
  launch(small, 0xf12, 2, 0, 1, ~uint64_t{0});
  rt.drain();
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 2u);
  EXPECT_EQ(rt.stats().decoded - before.decoded, 7u);
  rt.close(16);
  EXPECT_EQ(dev->pinned_frees.load(), 1);  // the outgrown arena, now
  rt.set_sink(nullptr);
  rt.staging_first_bytes = InstrRuntime::kStagingMb << 20;
}

// A batch that finds the arena held by batches still being decoded waits for them rather than
// pinning more: one arena for the whole run.
TEST(InstrRuntime, ABatchWaitsForStagingRoomInsteadOfPinningMore) {
  HoldingSink sink;
  fresh_runtime(&sink);
  InstrRuntime& rt = InstrRuntime::get();
  rt.staging_first_bytes = 1 << 20;
  ScratchBuilder b = full_segments(9);  // ~600 KB to stage
  const InstrStats before = rt.stats();
  rt.open(17, 16 << 20);
  rt.register_kernel(0xf14, kernel_info(b));
  launch(b, 0xf14, 1, 0, 1, ~uint64_t{0});
  EXPECT_TRUE(sink.wait_for(1));  // batch 1 is being decoded: its staging is held
  launch(b, 0xf14, 1, 0, 1, ~uint64_t{0});
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(rt.stats().batches - before.batches, 1u);  // batch 2 waits for room
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 1u);
  sink.release();
  rt.drain();
  EXPECT_EQ(rt.stats().decoded - before.decoded, 2u);
  EXPECT_EQ(rt.stats().staging_allocs - before.staging_allocs, 1u);  // no larger arena
  end_session(17);
  rt.staging_first_bytes = InstrRuntime::kStagingMb << 20;
}

TEST(InstrRuntime, LaunchExitWithoutAllocIsANoOp) {
  InstrRuntime& rt = InstrRuntime::get();
  InstrStats before = rt.stats();
  rt.launch_exit(0x1, 0, 0, 1);
  EXPECT_EQ(rt.stats().launches, before.launches);
}

TEST(InstrRuntime, BadAlignmentIsRejected) {
  EXPECT_THROW(InstrRuntime::get().alloc(64, 100, 0), std::invalid_argument);
}

}  // namespace
}  // namespace proton::instr

namespace proton::instr {
namespace {

// On the H100 the first launch of every process was lost (copy_errors 1): the consumer made its
// batch event before binding the launch's context. Every launch of a fresh device is decoded.
TEST(InstrRuntime, FirstBatchOfANewDeviceIsDecodedNotACopyError) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_device_api(std::make_unique<FakeDevice>());
  CollectingSink sink;
  rt.set_sink(&sink);
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(6, 1 << 16);
  rt.register_kernel(0xf06, kernel_info(b));
  InstrStats before = rt.stats();
  uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(0xf06, 0, 1, ~uint64_t{0});
  rt.drain();
  InstrStats after = rt.stats();
  EXPECT_EQ(after.copy_errors, before.copy_errors);
  EXPECT_EQ(after.decoded - before.decoded, 1u);
  rt.close(6);
  rt.set_sink(nullptr);
  std::lock_guard lock(sink.mu);
  EXPECT_EQ(sink.got.size(), 1u);
}

// The session runtime delivers by slot, and a public session id is not its slot once a process
// has started many sessions (the whole GPU suite in one process got no regions at all).
TEST(InstrRuntime, RegionsGoToTheSessionsDeliverBitNotItsId) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_device_api(std::make_unique<FakeDevice>());
  CollectingSink sink;
  rt.set_sink(&sink);
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(37, 1 << 16, uint64_t{1} << 2);  // public id 37 lives in slot 2
  rt.register_kernel(0xf07, kernel_info(b));
  uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(0xf07, 0, 1, 0b110);  // slots 1 and 2 active at launch
  rt.drain();
  rt.close(37);
  rt.set_sink(nullptr);
  std::lock_guard lock(sink.mu);
  ASSERT_EQ(sink.got.size(), 1u);
  EXPECT_EQ(sink.got[0].sessions, 0b100u);
}

// A launch on the per-thread default stream whose event record fails is one lost launch: counted
// once (it used to be counted at the launch's exit and again when the decoder skipped it).
TEST(InstrRuntime, FailedEventRecordOnThePerThreadStreamIsCountedOnce) {
  CollectingSink sink;
  ScratchBuilder b = one_region();
  FakeDevice* dev = start_with_kernel(&sink, 9, 1 << 16, 0xf09, b);
  InstrRuntime& rt = InstrRuntime::get();
  InstrStats before = rt.stats();
  dev->fail_records = true;
  rt.alloc(b.bytes().size(), 128, InstrRuntime::kPerThreadStream);
  rt.launch_exit(0xf09, InstrRuntime::kPerThreadStream, 1, ~uint64_t{0});
  rt.drain();
  dev->fail_records = false;
  rt.close(9);
  rt.set_sink(nullptr);
  EXPECT_EQ(rt.stats().copy_errors - before.copy_errors, 1u);
  bool named = false;
  for (const std::string& e : rt.errors())
    named = named || e.find("event record on the launch's stream") != std::string::npos;
  EXPECT_TRUE(named);
  std::lock_guard lock(sink.mu);
  EXPECT_TRUE(sink.got.empty());
}

// A failed copy is counted and says which driver call failed and the driver's error name.
TEST(InstrRuntime, CopyErrorIsCountedAndNamesTheDriverError) {
  InstrRuntime& rt = InstrRuntime::get();
  auto dev = std::make_unique<FakeDevice>();
  dev->fail_copies = true;
  rt.set_device_api(std::move(dev));
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(8, 1 << 16);
  rt.register_kernel(0xf08, kernel_info(b));
  InstrStats before = rt.stats();
  rt.alloc(b.bytes().size(), 128, 0);
  rt.launch_exit(0xf08, 0, 1, ~uint64_t{0});
  rt.drain();
  rt.close(8);
  EXPECT_EQ(rt.stats().copy_errors - before.copy_errors, 1u);
  bool named = false;
  for (const std::string& e : rt.errors())
    named = named || (e.find("device-to-host copy") != std::string::npos &&
                      e.find("FAKE_ERROR_COPY") != std::string::npos);
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace proton::instr

namespace proton::instr {
namespace {

// A sink that keeps the raw samples, to compare the runtime's compact copy-back with a decode
// of the whole buffer.
class SampleSink final : public RegionSink {
 public:
  void deliver(uint64_t, ContextId, const KernelInfo&, const DecodeResult& d, uint32_t,
               uint32_t) override {
    std::lock_guard lock(mu);
    for (const RegionSample& s : d.samples)
      got.push_back({s.cta, s.unit, s.scope, s.start_cycle, s.end_cycle});
    corrupt += d.corrupt_ctas;
    wrapped += d.wrapped_units;
    errors.insert(errors.end(), d.errors.begin(), d.errors.end());
  }
  std::mutex mu;
  std::vector<std::vector<uint64_t>> got;
  uint64_t corrupt = 0;
  uint64_t wrapped = 0;
  std::vector<std::string> errors;
};

std::vector<std::vector<uint64_t>> samples_of(const DecodeResult& d) {
  std::vector<std::vector<uint64_t>> out;
  for (const RegionSample& s : d.samples)
    out.push_back({s.cta, s.unit, s.scope, s.start_cycle, s.end_cycle});
  return out;
}

// Events of one unit: `n` closed regions of scope `scope`, `gap` cycles apart.
std::vector<Event> regions(uint32_t n, uint32_t scope, uint64_t from) {
  std::vector<Event> ev;
  for (uint32_t i = 0; i < n; ++i) {
    ev.push_back({false, scope, from + 100 * i});
    ev.push_back({true, scope, from + 100 * i + 40 + i});
  }
  return ev;
}

// On the H100 a 132-CTA launch reserved 1.1 MB of scratch and its warps wrote 16 bytes each:
// copying the whole slice back made 1,000 launches 13.6x slower than without instrumentation.
// Only the headers and the written events come back, and they decode to the same samples.
TEST(InstrRuntime, OnlyTheWrittenRecordsAreCopiedBackAndDecodeTheSame) {
  InstrRuntime& rt = InstrRuntime::get();
  SampleSink sink;
  FakeDevice* fake = fresh_runtime(&sink);
  ScratchBuilder b(4, 4 * 2048, 4);  // 2 KB per warp, as Triton's default buffer
  for (uint32_t cta = 0; cta < 16; ++cta)
    b.add_cta(cta, cta % 3,
              {regions(1, 0, 10), regions(2, 1, 20), regions(1, 0, 30), regions(3, 2, 40)});
  KernelInfo k = kernel_info(b);
  k.layout.num_warps = 4;
  rt.open(9, 4 << 20);  // every launch fits: none overflows
  rt.register_kernel(0xf09, k);
  InstrStats before = rt.stats();
  const int launches = 12;
  launch(b, 0xf09, launches, 7, 1, ~uint64_t{0});
  rt.drain();
  rt.close(9);
  rt.set_sink(nullptr);
  InstrStats after = rt.stats();
  EXPECT_EQ(after.decoded - before.decoded, uint64_t(launches));
  EXPECT_EQ(after.copy_errors, before.copy_errors);
  const uint64_t reserved = after.bytes_reserved - before.bytes_reserved;
  const uint64_t copied = after.bytes_copied - before.bytes_copied;
  EXPECT_EQ(copied, fake->copied.load());
  // Headers (56 B) and 4 x 48 B (the most any warp wrote: 3 regions) per CTA.
  EXPECT_EQ(copied, uint64_t(launches) * 16 * (56 + 4 * 48));
  EXPECT_LT(copied * 20, reserved);
  DecodeResult whole = decode_scratch(b.bytes(), k.layout);
  std::lock_guard lock(sink.mu);
  ASSERT_EQ(sink.got.size(), whole.samples.size() * launches);
  auto expected = samples_of(whole);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), sink.got.begin()));
}

// Granularity warp_group on an 8-warp kernel: warps 0,4,...,28 compiled in, so 8 segments of
// which warps 0 and 4 fill the first two. Only those come back, and decode as the whole slice.
TEST(InstrRuntime, GroupLeadersComeBackFromTheirOwnSegments) {
  InstrRuntime& rt = InstrRuntime::get();
  SampleSink sink;
  fresh_runtime(&sink);
  ScratchBuilder b(8, 8 * 256, 8);
  for (uint32_t cta = 0; cta < 4; ++cta) {
    b.add_cta(cta, cta, {regions(1, 0, 10), regions(2, 1, 20)});
    uint8_t* row = b.bytes().data() + size_t{cta} * b.slice_bytes();
    uint32_t words = 0;  // the builder indexes by position: move slot 1 to leader 4's slot
    std::memcpy(&words, row + kHeaderFixedBytes + 4, 4);
    ScratchBuilder::put32(row + kHeaderFixedBytes + 4, 0);
    ScratchBuilder::put32(row + kHeaderFixedBytes + 16, words);
  }
  KernelInfo k = kernel_info(b);
  k.layout.num_warps = 8;
  k.layout.units = {0, 4};
  k.layout.segments = 8;
  k.group_warps = 4;
  rt.open(11, 1 << 20);
  rt.register_kernel(0xf0d, k);
  InstrStats before = rt.stats();
  launch(b, 0xf0d, 3, 0, 1, ~uint64_t{0});
  rt.drain();
  rt.close(11);
  rt.set_sink(nullptr);
  EXPECT_EQ(rt.stats().decoded - before.decoded, 3u);
  DecodeResult whole = decode_scratch(b.bytes(), k.layout);
  ASSERT_TRUE(whole.errors.empty()) << whole.errors[0];
  ASSERT_EQ(whole.samples.size(), 4u * 3);  // per CTA: 1 region on warp 0, 2 on warp 4
  std::lock_guard lock(sink.mu);
  ASSERT_EQ(sink.got.size(), whole.samples.size() * 3);
  auto expected = samples_of(whole);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), sink.got.begin()));
  EXPECT_EQ(whole.samples[1].unit, 4u);
}

// A wrapped segment comes back whole (its oldest events were overwritten in place), and a CTA
// whose data size disagrees with its launch's is reported, never read as if it agreed.
TEST(InstrRuntime, WrappedSegmentsComeBackWholeAndOddCtasAreReported) {
  InstrRuntime& rt = InstrRuntime::get();
  SampleSink sink;
  fresh_runtime(&sink);
  ScratchBuilder b(2, 2 * 64, 2);                           // 8 events per warp
  b.add_cta(0, 0, {regions(6, 0, 10), regions(1, 1, 10)});  // warp 0 wraps (12 events)
  b.add_cta(1, 1, {regions(1, 0, 10), regions(2, 1, 10)});
  b.add_cta(2, 2, {regions(1, 0, 10), {}});
  // CTA 2 claims another data size.
  ScratchBuilder::put32(b.bytes().data() + 2 * b.slice_bytes() + 12, 64);
  KernelInfo k = kernel_info(b);
  rt.open(10, 1 << 16);
  rt.register_kernel(0xf0a, k);
  uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
  std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
  rt.launch_exit(0xf0a, 0, 1, ~uint64_t{0});
  rt.drain();
  rt.close(10);
  rt.set_sink(nullptr);
  // The expected samples: the whole buffer without CTA 2.
  std::vector<uint8_t> first_two(b.bytes().begin(), b.bytes().begin() + 2 * b.slice_bytes());
  DecodeResult whole = decode_scratch(first_two, k.layout);
  std::lock_guard lock(sink.mu);
  EXPECT_EQ(sink.got, samples_of(whole));
  EXPECT_EQ(sink.wrapped, 1u);
  EXPECT_EQ(sink.corrupt, 1u);
  bool said = false;
  for (const auto& e : sink.errors)
    said = said || e.find("data size differs") != std::string::npos;
  EXPECT_TRUE(said);
}

// The launching thread makes no driver call: the consumer records one event per stream after
// the batch's launches. Only a per-thread default stream needs the launching thread's event.
class RecordingDevice final : public DeviceApi {
 public:
  explicit RecordingDevice(FakeDevice& d) : d_(d) {}
  bool load(std::string& w) override { return d_.load(w); }
  bool capture_context() override { return d_.capture_context(); }
  void bind_context() override { d_.bind_context(); }
  uint32_t device_id() override { return d_.device_id(); }
  uint32_t sm_clock_khz() override { return d_.sm_clock_khz(); }
  uint64_t alloc_device(size_t n) override { return d_.alloc_device(n); }
  void free_device(uint64_t p) override { d_.free_device(p); }
  void* alloc_pinned(size_t n) override { return d_.alloc_pinned(n); }
  void free_pinned(void* p) override { d_.free_pinned(p); }
  void* create_stream() override { return d_.create_stream(); }
  void destroy_stream(void* s) override { d_.destroy_stream(s); }
  void* create_event() override { return d_.create_event(); }
  void destroy_event(void* e) override { d_.destroy_event(e); }
  bool record(void* e, uint64_t stream) override {
    std::lock_guard lock(mu);
    records.push_back({std::this_thread::get_id(), stream});
    return d_.record(e, stream);
  }
  bool wait(void* s, void* e) override { return d_.wait(s, e); }
  bool copy_2d_to_host_async(void* dst, size_t dp, uint64_t src, size_t sp, size_t w, size_t h,
                             void* s) override {
    return d_.copy_2d_to_host_async(dst, dp, src, sp, w, h, s);
  }
  bool synchronize(void* e) override { return d_.synchronize(e); }
  std::mutex mu;
  std::vector<std::pair<std::thread::id, uint64_t>> records;

 private:
  FakeDevice& d_;
};

TEST(InstrRuntime, TheLaunchingThreadRecordsNothingButOnAPerThreadStream) {
  InstrRuntime& rt = InstrRuntime::get();
  FakeDevice fake;
  auto dev = std::make_unique<RecordingDevice>(fake);
  RecordingDevice* rec = dev.get();
  rt.set_device_api(std::move(dev));
  CollectingSink sink;
  rt.set_sink(&sink);
  rt.overflow_wait_ms = 0;
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  rt.open(11, 1 << 16);
  rt.register_kernel(0xf0b, kernel_info(b));
  for (uint64_t stream : {5u, 5u, 6u, 2u}) {
    uint64_t p = rt.alloc(b.bytes().size(), 128, stream);
    std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
    rt.launch_exit(0xf0b, stream, 1, ~uint64_t{0});
  }
  rt.drain();
  rt.close(11);
  rt.set_sink(nullptr);
  {
    std::lock_guard lock(sink.mu);
    EXPECT_EQ(sink.got.size(), 4u);
  }
  std::set<uint64_t> here, consumer;
  {
    // Not held across set_device_api: the runtime calls record() under its own lock.
    std::lock_guard lock(rec->mu);
    for (auto& [thread, stream] : rec->records)
      (thread == std::this_thread::get_id() ? here : consumer).insert(stream);
  }
  EXPECT_EQ(here, std::set<uint64_t>{2u});
  EXPECT_TRUE(consumer.count(5u) && consumer.count(6u));
  EXPECT_FALSE(consumer.count(2u));
  rt.set_device_api(nullptr);
}

}  // namespace
}  // namespace proton::instr
