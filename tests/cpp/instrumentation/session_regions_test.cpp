// Sessions own the instrumentation runtime's life: starting a session with
// backend="instrumentation" opens its pool (delivering to the session's slot), finalizing it
// drains every queued launch into the session's tree and frees the pool. The runtime runs on
// a fake device, the sessions over the fake backend.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "../runtime_fixture.h"
#include "backends/instrumentation/instr_runtime.h"
#include "common/name_table.h"
#include "context/thread_context.h"
#include "fake_device.h"
#include "scratch_builder.h"

namespace proton::testing {
namespace {

using instr::InstrRuntime;
using instr::testing::ScratchBuilder;

class SessionRegions : public RuntimeFixture {
 protected:
  SessionRegions() : RuntimeFixture("proton_session_regions_", 7'000'000) {}

  void SetUp() override {
    RuntimeFixture::SetUp();
    auto device = std::make_unique<instr::testing::FakeDevice>();
    device_ = device.get();
    InstrRuntime::get().set_device_api(std::move(device));
    InstrRuntime::get().set_sink(nullptr);  // a session's start installs the sessions' sink
  }
  void TearDown() override {
    RuntimeFixture::TearDown();
    InstrRuntime::get().set_sink(nullptr);
  }

  SessionConfig instrumented(const std::string& name, const std::string& mode = "") {
    SessionConfig c = config(name, mode);
    c.backend = "instrumentation";
    return c;
  }

  /// One launch of kernel "matmul" whose first warp closed region "loop" (10 cycles), queued
  /// for every active session as a launch of the current context.
  void launch_regions(uint64_t function) {
    ScratchBuilder b(2, 256, 2);
    b.add_cta(0, 1, {{{false, 0, 10}, {true, 0, 20}}, {}});
    instr::KernelInfo k;
    auto& names = NameTable::global();
    k.name = names.intern("matmul");
    k.layout = instr::KernelLayout{b.warps(), b.slice_bytes(), {}, 0};
    k.scope_names.assign(256, kNoName);
    k.scope_parents.assign(256, -1);
    k.scope_names[0] = names.intern("loop");
    InstrRuntime& rt = InstrRuntime::get();
    rt.register_kernel(function, std::move(k));
    uint64_t p = rt.alloc(b.bytes().size(), 128, 0);
    std::memcpy(reinterpret_cast<void*>(p), b.bytes().data(), b.bytes().size());
    rt.launch_exit(function, 0, ThreadContext::launch_context(),
                   LaunchStage::active_sessions.load(std::memory_order_relaxed));
  }

  /// The "loop" region's node below kernel "matmul" in session `name`'s written tree.
  const nlohmann::json* loop_region(const nlohmann::json& tree) {
    const nlohmann::json* kernel = child(tree[0], "matmul");
    return kernel == nullptr ? nullptr : child(*kernel, "loop");
  }

  instr::testing::FakeDevice* device_ = nullptr;
};

TEST_F(SessionRegions, StartOpensThePoolAndFinalizeDrainsAndClosesIt) {
  EXPECT_EQ(InstrRuntime::get().stats().pool_bytes, 0u);
  SessionId id = rt_.start(instrumented("regions"));
  // The pool's device memory is allocated at the start (one GPU, a context on this thread).
  EXPECT_GT(InstrRuntime::get().stats().pool_bytes, 0u);
  EXPECT_EQ(rt_.instrumentation_mode(id), std::optional<std::string>(""));
  launch_regions(0xa001);
  // No drain here: finalize itself waits for the queued launch and adds its regions.
  rt_.finalize(id, "");
  EXPECT_EQ(InstrRuntime::get().stats().pool_bytes, 0u);
  nlohmann::json tree = read("regions");
  const nlohmann::json* loop = loop_region(tree);
  ASSERT_NE(loop, nullptr) << tree.dump();
  EXPECT_EQ((*loop)["metrics"]["cycles"], 10) << tree.dump();
  // One warp of the two ran it: per running warp 10 cycles, and the CTA's slowest took 10.
  EXPECT_EQ((*loop)["metrics"]["mean_warp_cycles"], 10.0) << tree.dump();
  EXPECT_EQ((*loop)["metrics"]["max_warp_cycles"], 10.0) << tree.dump();
}

TEST_F(SessionRegions, RegionsReachTheSessionsSlotNotItsPublicId) {
  // Ids grow past slots: a session started after another was finalized takes its slot.
  rt_.finalize(rt_.start(config("before")), "");
  SessionId id = rt_.start(instrumented("late"));
  ASSERT_NE(id, rt_.slot_for_testing(id));
  launch_regions(0xa002);
  rt_.finalize(id, "");
  nlohmann::json tree = read("late");
  EXPECT_NE(loop_region(tree), nullptr) << tree.dump();
}

TEST_F(SessionRegions, OtherSessionsOpenNoPool) {
  SessionId id = rt_.start(config("plain"));
  EXPECT_EQ(InstrRuntime::get().stats().pool_bytes, 0u);
  EXPECT_EQ(rt_.instrumentation_mode(id), std::nullopt);
  EXPECT_EQ(device_->allocs, 0);
}

TEST_F(SessionRegions, InstrumentationSessionsMustAgreeOnTheMode) {
  rt_.start(instrumented("a"));
  // Spelled out, the default mode is the same one: Triton compiles the kernel once for both.
  EXPECT_NO_THROW(rt_.start(instrumented(
      "b", "default:granularity=warp:buffer_type=global:optimizations=clock32,sched_stores")));
  try {
    rt_.start(instrumented("c", "default:buffer_size=1024"));
    FAIL() << "a second mode was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the running session's 'default'"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(SessionRegions, ALaterSessionMayUseAnotherMode) {
  // Only sessions that run together share Triton's passes: once one is finalized, the next may
  // instrument with other options, and each gets its own pool and its regions.
  const char* modes[] = {"", "default:buffer_size=1024", "default:buffer_type=shared", "",
                         "default:granularity=warp:optimizations=clock32"};
  uint64_t function = 0xb000;
  for (const char* mode : modes) {
    std::string name = "seq" + std::to_string(function & 0xf);
    SessionId id = rt_.start(instrumented(name, mode));
    EXPECT_EQ(rt_.instrumentation_mode(id), std::optional<std::string>(mode));
    EXPECT_GT(InstrRuntime::get().stats().pool_bytes, 0u);
    launch_regions(++function);
    rt_.finalize(id, "");
    EXPECT_EQ(InstrRuntime::get().stats().pool_bytes, 0u);
    nlohmann::json tree = read(name);
    EXPECT_NE(loop_region(tree), nullptr) << mode << ": " << tree.dump();
  }
  EXPECT_FALSE(rt_.has_sessions());
}

TEST_F(SessionRegions, ModesTritonsPassesCannotCompileAreRefusedAtStart) {
  for (const char* mode :
       {"graph", "default:buffer_strategy=flush",
        "default:granularity=warp_group:sampling_strategy=selective:sampling_options=0,1"}) {
    EXPECT_THROW(rt_.start(instrumented("x", mode)), std::invalid_argument) << mode;
  }
  EXPECT_FALSE(rt_.has_sessions());
  EXPECT_EQ(InstrRuntime::get().stats().pool_bytes, 0u);
}

}  // namespace
}  // namespace proton::testing
