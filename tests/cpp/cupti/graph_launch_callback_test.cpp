// The CUPTI launch callback's side of instrumented launches captured into CUDA graphs: a graph
// launch through the subscriber callback (hand-built callback data) copies the captured
// launches' records at its exit, with kernel records on or off, and places them where the
// replay's kernel records go: "replay site / <captured_at> / capture site".
#include <cupti.h>
#include <gtest/gtest.h>

#include "backends/cupti/launch_callbacks.h"
#include "backends/instrumentation/instr_runtime.h"
#include "common/hot.h"
#include "context/thread_context.h"
#include "instrumentation/runtime_helpers.h"
#include "test_util.h"

namespace proton::instr {
namespace {

namespace fake = testing;  // the instrumentation runtime's fixtures (fake device, sink)

constexpr uint64_t kFn = 0xC0DE;
constexpr uint64_t kCaptureStream = 7;

void graph_launch_call(CUpti_ApiCallbackSite site, cudaGraphLaunch_v10000_params& params) {
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.correlationId = 500;
  data.functionName = "cudaGraphLaunch";
  data.functionParams = &params;
  cupti::on_launch_api(nullptr, CUPTI_CB_DOMAIN_RUNTIME_API,
                       CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &data);
}

TEST(GraphLaunchCallback, CopiesEachLaunchOfAGraphWithCapturedLaunchesAtItsExit) {
  proton::testing::MainThreadFixture main;
  auto& tc = ThreadContext::current();
  fake::CollectingSink sink;
  fake::ScratchBuilder b = fake::one_region();
  fake::FakeDevice* dev = fake::start_with_kernel(&sink, 1, 1 << 20, kFn, b);
  InstrRuntime& rt = InstrRuntime::get();
  const bool was_on = hot::globals.launch_callbacks_on.load();
  const bool records_off = hot::globals.kernel_records_off.load();
  hot::globals.launch_callbacks_on.store(true);
  rt.set_exit_via_callback(true);
  dev->begin_capture(kCaptureStream);
  tc.enter_scope(proton::testing::id("capture_site"));
  fake::launch(b, kFn, 1, kCaptureStream, ThreadContext::launch_context(), fake::kSessionOneBit);
  tc.exit_scope(proton::testing::id("capture_site"));
  hot::this_thread().exit_work = 0;  // the exit above stood for the callback's
  dev->end_capture(kCaptureStream);
  rt.graph_instantiated(fake::FakeDevice::kGraphBase + kCaptureStream, 90);
  cudaGraphLaunch_v10000_params params{reinterpret_cast<cudaGraphExec_t>(uintptr_t{90}),
                                       reinterpret_cast<cudaStream_t>(uintptr_t{11})};
  tc.enter_scope(proton::testing::id("replay_site"));
  for (bool off : {true, false}) {
    hot::globals.kernel_records_off.store(off);
    cupti::reset_launch_nesting();
    graph_launch_call(CUPTI_API_ENTER, params);
    EXPECT_NE(hot::this_thread().exit_work & hot::kExitInstr, 0) << "records off: " << off;
    graph_launch_call(CUPTI_API_EXIT, params);
  }
  tc.exit_scope(proton::testing::id("replay_site"));
  hot::globals.kernel_records_off.store(records_off);
  rt.drain();
  EXPECT_EQ(dev->stream_copies.load(), 2);
  ASSERT_EQ(sink.got.size(), 2u);
  EXPECT_EQ(proton::testing::path_of(sink.got[0].ctx), "replay_site/<captured_at>/capture_site");
  EXPECT_EQ(sink.got[1].ctx, sink.got[0].ctx);
  EXPECT_EQ(hot::this_thread().exit_work, 0);
  rt.set_exit_via_callback(false);
  hot::globals.launch_callbacks_on.store(was_on);
  fake::end_session(1);
}

}  // namespace
}  // namespace proton::instr
