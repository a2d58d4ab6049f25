// What the instrumentation runtime's tests share: a sink that keeps what it is given, a kernel's
// layout, and a fresh runtime on a fake device with a session open.
#pragma once

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/instrumentation/instr_runtime.h"
#include "backends/instrumentation/region_totals.h"
#include "common/name_table.h"
#include "fake_device.h"
#include "scratch_builder.h"

namespace proton::instr::testing {

/// Session 1's bit in what the runtime delivers (its slot in the session runtime's mask).
inline constexpr uint64_t kSessionOneBit = uint64_t{1} << 1;

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

inline KernelInfo kernel_info(const ScratchBuilder& b) {
  KernelInfo k;
  auto& names = NameTable::global();
  k.name = names.intern("matmul");
  k.layout = KernelLayout{b.warps(), b.slice_bytes(), {}, 0};
  k.scope_names.assign(256, kNoName);
  k.scope_parents.assign(256, -1);
  k.scope_names[0] = names.intern("loop");
  k.scope_names[1] = names.intern("load");
  k.scope_parents[1] = 0;
  return k;
}

/// The runtime on a fresh fake device, delivering to `sink`; a full pool waits `wait_ms`.
inline FakeDevice* fresh_runtime(RegionSink* sink, uint32_t wait_ms = 0) {
  InstrRuntime& rt = InstrRuntime::get();
  auto dev = std::make_unique<FakeDevice>();
  FakeDevice* fake = dev.get();
  rt.set_device_api(std::move(dev));
  rt.set_sink(sink);
  rt.overflow_wait_ms = wait_ms;
  return fake;
}

/// One CTA of two warps, the first of which closed one region (10 cycles).
inline ScratchBuilder one_region() {
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
  return b;
}

/// A fresh runtime delivering to `sink`, with session `id` open (a pool of `pool_bytes`) and
/// `b`'s layout registered as kernel `function`.
inline FakeDevice* start_with_kernel(RegionSink* sink, uint32_t id, uint64_t pool_bytes,
                                     uint64_t function, const ScratchBuilder& b) {
  FakeDevice* dev = fresh_runtime(sink);
  InstrRuntime::get().open(id, pool_bytes);
  InstrRuntime::get().register_kernel(function, kernel_info(b));
  return dev;
}

/// Closes session `id` and detaches the test's sink from the runtime.
inline void end_session(uint32_t id) {
  InstrRuntime::get().close(id);
  InstrRuntime::get().set_sink(nullptr);
}

/// `n` launches of kernel `function` on `stream` whose warps wrote what `b` holds; returns the
/// last one's scratch address.
inline uint64_t launch(const ScratchBuilder& b, uint64_t function, int n, uint64_t stream,
                       ContextId ctx, uint64_t sessions) {
  InstrRuntime& rt = InstrRuntime::get();
  uint64_t p = 0;
  for (int i = 0; i < n; ++i) {
    p = rt.alloc(b.bytes().size(), 128, stream);
    std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
    rt.launch_exit(function, stream, ctx, sessions);
  }
  return p;
}

}  // namespace proton::instr::testing
