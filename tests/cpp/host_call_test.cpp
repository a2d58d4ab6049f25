// Host calls (synchronizes, blocking copies) from a thread's tag queue to the session's tree and
// the Hatchet file: synthetic calls staged with LaunchStage::host_call, no GPU.
#include "attribution/host_call.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "attribution/record_processor.h"
#include "data/trace_store.h"
#include "io/chrome_trace_writer.h"
#include "io/hatchet_writer.h"
#include "session/session.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

// Delivers to one session, as the runtime does for the sessions of a record's mask.
class OneSession : public RecordSink {
 public:
  explicit OneSession(Session& s) : s_(s) {}
  void deliver(SessionMask sessions, const Record& record) override {
    if (sessions & 1) s_.collect(record);
  }

 private:
  Session& s_;
};

HostCall sync_call(uint64_t ns, HostCallKind kind = HostCallKind::kStreamSync) {
  HostCall c;
  c.kind = kind;
  c.start_ns = 1000;
  c.duration_ns = ns;
  return c;
}

HostCall copy_call(uint64_t ns, uint64_t bytes, CopyDirection d, HostMemory m) {
  HostCall c;
  c.kind = HostCallKind::kCopy;
  c.direction = d;
  c.memory = m;
  c.start_ns = 2000;
  c.duration_ns = ns;
  c.bytes = bytes;
  return c;
}

// The child of `parent` named `name`, or nullptr.
const CallTree::Node* child(const CallTree& t, CallTree::NodeId parent, std::string_view name) {
  for (CallTree::NodeId c : t.node(parent).children)
    if (t.node(c).name == id(name)) return &t.node(c);
  return nullptr;
}

int64_t metric(const CallTree::Node* n, std::string_view name) {
  if (n == nullptr) return -1;
  for (const auto& [m, v] : n->metrics)
    if (m == id(name)) return std::get<int64_t>(v);
  return -1;
}

class HostCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::drain_tags();
    LaunchStage::active_sessions = 1;
  }
  void TearDown() override { LaunchStage::active_sessions = 0; }
  testing::MainThreadFixture main_;
};

TEST(HostCallTag, CarriesEveryFieldThroughTheQueueLayout) {
  HostCall c = copy_call((uint64_t{5} << 40) + 7, uint64_t{3} << 33, CopyDirection::kDtoH,
                         HostMemory::kPageable);
  c.continued = true;
  LaunchTag t = host_call_tag(c);
  t.flags |= 0x123u << kTagEpochShift;  // the processor's stamp leaves the call alone
  HostCall back = host_call_of(t);
  EXPECT_EQ(back.kind, HostCallKind::kCopy);
  EXPECT_EQ(back.direction, CopyDirection::kDtoH);
  EXPECT_EQ(back.memory, HostMemory::kPageable);
  EXPECT_TRUE(back.continued);
  EXPECT_EQ(back.start_ns, 2000u);
  EXPECT_EQ(back.duration_ns, (uint64_t{5} << 40) + 7);
  EXPECT_EQ(back.bytes, uint64_t{3} << 33);
  // Beyond 48 bits (78 hours) the duration saturates instead of wrapping.
  EXPECT_EQ(host_call_of(host_call_tag(sync_call(~uint64_t{0}))).duration_ns,
            (uint64_t{1} << 48) - 1);
}

TEST_F(HostCalls, LandOnAChildOfTheirCallPathWithTimeCallsAndBytes) {
  Session s(0, SessionConfig{});
  OneSession sink(s);
  RecordProcessor processor(sink);
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("step"));
  LaunchStage::host_call(sync_call(3000));
  LaunchStage::host_call(sync_call(5000));
  LaunchStage::host_call(copy_call(700, 4096, CopyDirection::kHtoD, HostMemory::kPageable));
  // The stream synchronize that finished that copy: its time, not a call of its own.
  HostCall wait = copy_call(900, 0, CopyDirection::kHtoD, HostMemory::kPageable);
  wait.continued = true;
  LaunchStage::host_call(wait);
  LaunchStage::host_call(copy_call(50, 64, CopyDirection::kDtoD, HostMemory::kNone));
  tc.exit_scope(id("step"));
  LaunchStage::host_call(sync_call(11, HostCallKind::kDeviceSync));
  processor.settle();

  std::lock_guard lock(s.mu);
  const CallTree& t = s.tree();
  const CallTree::Node* step = child(t, CallTree::kRoot, "step");
  ASSERT_NE(step, nullptr);
  CallTree::NodeId step_id = static_cast<CallTree::NodeId>(step - &t.node(0));
  const CallTree::Node* sync = child(t, step_id, "cudaStreamSynchronize");
  EXPECT_EQ(metric(sync, "sync_time (ns)"), 8000);
  EXPECT_EQ(metric(sync, "sync_calls"), 2);
  const CallTree::Node* copy = child(t, step_id, "memcpy HtoD (pageable)");
  EXPECT_EQ(metric(copy, "memcpy_time (ns)"), 1600);
  EXPECT_EQ(metric(copy, "memcpy_calls"), 1);
  EXPECT_EQ(metric(copy, "memcpy_bytes"), 4096);
  EXPECT_EQ(metric(child(t, step_id, "memcpy DtoD (blocking)"), "memcpy_bytes"), 64);
  EXPECT_EQ(metric(child(t, CallTree::kRoot, "cudaDeviceSynchronize"), "sync_time (ns)"), 11);
  EXPECT_FALSE(step->has_kernel);
}

TEST_F(HostCalls, NoActiveSessionStagesNothing) {
  LaunchStage::active_sessions = 0;
  LaunchStage::host_call(sync_call(10));
  EXPECT_TRUE(testing::drain_tags().empty());
}

TEST_F(HostCalls, FollowTheirPhase) {
  Session s(0, SessionConfig{});
  OneSession sink(s);
  RecordProcessor processor(sink);
  LaunchStage::host_call(sync_call(10));
  processor.advance_epoch([&](uint32_t epoch) { s.begin_phase(epoch); });
  LaunchStage::host_call(sync_call(20));
  processor.settle();
  std::lock_guard lock(s.mu);
  EXPECT_EQ(
      metric(child(*s.phase_tree(0), CallTree::kRoot, "cudaStreamSynchronize"), "sync_time (ns)"),
      10);
  EXPECT_EQ(
      metric(child(*s.phase_tree(1), CallTree::kRoot, "cudaStreamSynchronize"), "sync_time (ns)"),
      20);
}

TEST_F(HostCalls, AreSummedColumnsOfTheHatchetFile) {
  // Hatchet and Triton's viewer take columns from the root's keys and sum them over subtrees:
  // the root lists the host-call metrics (0), the nodes hold their own values, and nothing is
  // added to the kernels' "time (ns)".
  Session s(0, SessionConfig{});
  OneSession sink(s);
  RecordProcessor processor(sink);
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("loop"));
  LaunchStage::host_call(sync_call(3000));
  LaunchStage::host_call(copy_call(700, 4096, CopyDirection::kDtoH, HostMemory::kPinned));
  tc.exit_scope(id("loop"));
  processor.settle();
  std::lock_guard lock(s.mu);
  json j = json::parse(hatchet_json(s.tree(), {}, {}));
  const json& root = j[0];
  for (const char* m :
       {"sync_time (ns)", "sync_calls", "memcpy_time (ns)", "memcpy_calls", "memcpy_bytes"}) {
    ASSERT_TRUE(root["metrics"].contains(m)) << m;
    EXPECT_EQ(root["metrics"][m], 0) << m;
  }
  EXPECT_FALSE(root["metrics"].contains("time (ns)"));
  const json& loop = root["children"][0];
  EXPECT_EQ(loop["frame"]["name"], "loop");
  std::vector<std::string> names;
  for (const json& c : loop["children"])
    names.push_back(c["frame"]["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"cudaStreamSynchronize", "memcpy DtoH (blocking)"}));
  EXPECT_EQ(loop["children"][0]["metrics"]["sync_time (ns)"], 3000);
  EXPECT_EQ(loop["children"][1]["metrics"]["memcpy_bytes"], 4096);
  EXPECT_EQ(loop["children"][1]["frame"]["type"], "function");
}

TEST_F(HostCalls, AreBoxesOnTheirThreadsLaneInATrace) {
  SessionConfig config;
  config.data = "tree,trace";
  config.name = (std::filesystem::temp_directory_path() /
                 ("proton_host_call_trace_" + std::to_string(::getpid())))
                    .string();
  Session s(0, config);
  {
    std::lock_guard lock(s.mu);
    s.start_trace(TraceClock{500, 1, 0}, 0);
  }
  OneSession sink(s);
  RecordProcessor processor(sink);
  LaunchStage::host_call(copy_call(700, 4096, CopyDirection::kHtoD, HostMemory::kPageable));
  processor.settle();
  std::lock_guard lock(s.mu);
  std::vector<TraceEvent> events;
  s.trace()->for_each_chunk([&](std::span<const TraceEvent> chunk) {
    events.insert(events.end(), chunk.begin(), chunk.end());
  });
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, TraceEvent::kHostCall);
  EXPECT_EQ(events[0].start_ns, 2000u);
  EXPECT_EQ(events[0].end_ns, 2700u);
  EXPECT_EQ(events[0].correlation, 4096u);
  EXPECT_EQ(events[0].name, id("memcpy HtoD (pageable)"));
  // The tree has it too.
  EXPECT_NE(child(s.tree(), CallTree::kRoot, "memcpy HtoD (pageable)"), nullptr);
  s.finish_trace(10000);
  std::filesystem::remove(s.output_path("chrome_trace"));
}

TEST(HostCallTrace, TheWriterDrawsACpuBoxWithBytes) {
  testing::MainThreadFixture main;
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("step"));
  ContextId step = tc.scope_context();
  tc.exit_scope(id("step"));
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("proton_host_call_unit_" + std::to_string(::getpid()) + ".chrome_trace");
  ChromeTraceWriter w(path.string(), TraceClock{1000, 1, 0});
  TraceEvent e;
  e.kind = TraceEvent::kHostCall;
  e.start_ns = 3000;
  e.end_ns = 5000;
  e.context = step;
  e.name = id("memcpy HtoD (pageable)");
  e.thread = 2;
  e.correlation = 4096;
  TraceEvent wait = e;
  wait.name = id("cudaStreamSynchronize");
  wait.correlation = 0;
  wait.flags = 1;
  std::vector<TraceEvent> batch{e, wait};
  w.append(batch);
  w.finish(TraceSummary{});
  std::ifstream in(path);
  json trace = json::parse(in);
  std::filesystem::remove(path);
  std::vector<json> x;
  for (const json& ev : trace["traceEvents"])
    if (ev["ph"] == "X") x.push_back(ev);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]["cat"], "host_call");
  EXPECT_EQ(x[0]["name"], "memcpy HtoD (pageable)");
  EXPECT_EQ(x[0]["ts"], 2.0);
  EXPECT_EQ(x[0]["dur"], 2.0);
  EXPECT_EQ(x[0]["args"]["bytes"], 4096);
  EXPECT_EQ(x[0]["args"]["call_stack"], (json{"step"}));
  EXPECT_FALSE(x[1]["args"].contains("bytes"));
  EXPECT_EQ(x[1]["args"]["finishes_copy"], true);
  EXPECT_EQ(x[0]["tid"], x[1]["tid"]);
}

TEST(HostCallFrame, NamesSayWhatBlocked) {
  EXPECT_STREQ(host_call_frame(sync_call(1, HostCallKind::kEventSync)), "cudaEventSynchronize");
  EXPECT_STREQ(host_call_frame(copy_call(1, 1, CopyDirection::kHtoD, HostMemory::kPinned)),
               "memcpy HtoD (blocking)");
  EXPECT_STREQ(host_call_frame(copy_call(1, 1, CopyDirection::kUnknown, HostMemory::kPageable)),
               "memcpy (pageable)");
  EXPECT_STREQ(host_call_frame(copy_call(1, 1, CopyDirection::kHtoH, HostMemory::kPageable)),
               "memcpy HtoH (pageable)");
}

}  // namespace
}  // namespace proton
