// The instrumentation runtime on a fake device whose memory is host memory: pools, hand-out,
// copy-back, decoding on the consumer thread, overflow, and region totals.
#include "backends/instrumentation/instr_runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "backends/instrumentation/region_totals.h"
#include "common/name_table.h"
#include "scratch_builder.h"

namespace proton::instr {
namespace {

using testing::Event;
using testing::ScratchBuilder;

class FakeDevice final : public DeviceApi {
 public:
  bool load(std::string&) override { return true; }
  bool capture_context() override {
    bind_context();
    return true;
  }
  void bind_context() override {
    std::lock_guard lock(bound_mu);
    bound.insert(std::this_thread::get_id());
  }
  uint32_t device_id() override { return 3; }
  uint32_t sm_clock_khz() override { return 1000000; }
  uint64_t alloc_device(size_t bytes) override {
    ++allocs;
    // cuMemAlloc's alignment (256), which the pool's slice alignment relies on.
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    std::memset(p, 0, bytes);
    return reinterpret_cast<uint64_t>(p);
  }
  void free_device(uint64_t p) override { std::free(reinterpret_cast<void*>(p)); }
  void* alloc_pinned(size_t bytes) override { return new uint8_t[bytes](); }
  void free_pinned(void* p) override { delete[] static_cast<uint8_t*>(p); }
  void* create_stream() override { return this; }
  void destroy_stream(void*) override {}
  // As CUDA: a thread that never made the context current gets no event (the H100 failure:
  // CUDA_ERROR_INVALID_CONTEXT for the consumer's first event).
  void* create_event() override { return has_context() ? new int(0) : nullptr; }
  void destroy_event(void* e) override { delete static_cast<int*>(e); }
  bool record(void*, uint64_t) override { return has_context(); }
  bool wait(void*, void*) override { return has_context(); }
  bool copy_to_host_async(void* dst, uint64_t src, size_t n, void*) override {
    if (!has_context() || fail_copies) return false;
    std::memcpy(dst, reinterpret_cast<void*>(src), n);
    return true;
  }
  bool synchronize(void*) override { return has_context(); }
  bool has_context() {
    std::lock_guard lock(bound_mu);
    return bound.count(std::this_thread::get_id()) != 0;
  }
  std::string last_error() override { return fail_copies ? "FAKE_ERROR_COPY (7)" : ""; }
  int allocs = 0;
  bool fail_copies = false;
  std::mutex bound_mu;
  std::set<std::thread::id> bound;  // threads that made this device's context current
};

struct Delivery {
  uint64_t sessions;
  ContextId ctx;
  std::vector<RegionTotals> totals;
  uint32_t device;
  std::vector<RegionSpan> spans;
};

class CollectingSink final : public RegionSink {
 public:
  void deliver(uint64_t sessions, ContextId ctx, const KernelInfo& k, const DecodeResult& d,
               uint32_t device, uint32_t clock_khz) override {
    std::lock_guard lock(mu);
    got.push_back({sessions, ctx, region_totals(k, d), device, region_spans(k, d, clock_khz)});
  }
  std::mutex mu;
  std::vector<Delivery> got;
};

KernelInfo kernel_info(const ScratchBuilder& b) {
  KernelInfo k;
  auto& names = NameTable::global();
  k.name = names.intern("matmul");
  k.layout = KernelLayout{2, b.slice_bytes(), {}, 0};
  k.scope_names.assign(256, kNoName);
  k.scope_parents.assign(256, -1);
  k.scope_names[0] = names.intern("loop");
  k.scope_names[1] = names.intern("load");
  k.scope_parents[1] = 0;
  return k;
}

TEST(InstrRuntime, LaunchesAreCopiedBackDecodedAndSummed) {
  InstrRuntime& rt = InstrRuntime::get();
  auto dev = std::make_unique<FakeDevice>();
  FakeDevice* fake = dev.get();
  rt.set_device_api(std::move(dev));
  CollectingSink sink;
  rt.set_sink(&sink);
  rt.overflow_wait_ms = 0;
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

TEST(InstrRuntime, FullPoolOverflowsToADiscardSliceAndCounts) {
  InstrRuntime& rt = InstrRuntime::get();
  rt.set_device_api(std::make_unique<FakeDevice>());
  CollectingSink sink;
  rt.set_sink(&sink);
  rt.overflow_wait_ms = 0;
  rt.open(1, 1024);
  InstrStats before = rt.stats();
  uint64_t a = rt.alloc(1000, 128, 0);  // takes the pool (1024)
  uint64_t c = rt.alloc(1000, 128, 0);  // no launch_exit for a: still in flight -> discard
  EXPECT_NE(a, 0u);
  EXPECT_NE(c, 0u);
  EXPECT_NE(a, c);
  rt.launch_exit(0x1, 0, 0, 0b10);           // the discard launch: nothing queued
  uint64_t big = rt.alloc(1 << 20, 128, 0);  // larger than the pool: discard, grown
  EXPECT_NE(big, 0u);
  rt.launch_exit(0x1, 0, 0, 0b10);
  InstrStats after = rt.stats();
  EXPECT_EQ(after.overflows - before.overflows, 2u);
  EXPECT_EQ(after.launches, before.launches);
  rt.drain();
  rt.close(1);
  rt.set_sink(nullptr);
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
