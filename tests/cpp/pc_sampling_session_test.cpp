// mode="pcsampling" through the whole Runtime over the fake backend: samples handed to the
// record processor land under the right kernel and call path in the written profile.
#include <gtest/gtest.h>

#include <stdexcept>

#include "backends/pc_sampling_options.h"
#include "options/mode.h"
#include "runtime_fixture.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

class PcSessions : public testing::RuntimeFixture {
 protected:
  PcSessions() : RuntimeFixture("proton_pc_session_test_", 5000) {}

  PcSampleBatch samples(const std::string& fn, const std::string& loc, uint32_t n) {
    PcSampleBatch b;
    b.reasons = std::make_shared<const PcStallTable>(
        PcStallTable::from_names({"smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                                  "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued"}));
    PcSample s;
    s.function = id(fn);
    s.location = id(loc);
    s.stall_begin = 0;
    s.stall_count = 2;
    b.stalls = {{0, n}, {1, n}};
    b.samples.push_back(s);
    return b;
  }
};

TEST_F(PcSessions, SamplesLandUnderTheKernelOfEachCallPath) {
  SessionId s = rt_.start(config("pc", "pcsampling:interval=65536"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("fast"));
  launch("shared_kernel", 100);
  tc.exit_scope(id("fast"));
  tc.enter_scope(id("slow"));
  launch("shared_kernel", 300);
  tc.exit_scope(id("slow"));
  fake_->flush();  // kernel records first, then a drain of samples
  rt_.processor().deliver(PcSamples{samples("shared_kernel", "k.py:7@shared_kernel", 40)});
  rt_.finalize(s, "");
  json j = read("pc");
  const json* fast = child(j[0], "fast");
  const json* slow = child(j[0], "slow");
  ASSERT_TRUE(fast && slow);
  const json* line_fast = child(*child(*fast, "shared_kernel"), "k.py:7@shared_kernel");
  const json* line_slow = child(*child(*slow, "shared_kernel"), "k.py:7@shared_kernel");
  ASSERT_TRUE(line_fast && line_slow);
  EXPECT_EQ((*line_fast)["metrics"]["num_samples"], 10);
  EXPECT_EQ((*line_slow)["metrics"]["num_samples"], 30);
  EXPECT_EQ((*line_slow)["metrics"]["num_stalled_samples"], 30);
  EXPECT_EQ((*line_slow)["metrics"]["stalled_long_scoreboard"], 30);
}

TEST_F(PcSessions, SamplesBeforeTheirKernelRecordsArePlacedAtFinalize) {
  SessionId s = rt_.start(config("early", "pcsampling"));
  launch("k", 50);
  rt_.processor().deliver(PcSamples{samples("k", "k.py:1@k", 5)});  // record not delivered yet
  rt_.finalize(s, "");
  json j = read("early");
  const json* line = child(*child(j[0], "k"), "k.py:1@k");
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["metrics"]["num_samples"], 5);
}

TEST_F(PcSessions, SessionsWithoutPcSamplingIgnoreSamples) {
  SessionId s = rt_.start(config("plain"));
  launch("k", 50);
  fake_->flush();
  rt_.processor().deliver(PcSamples{samples("k", "k.py:1@k", 5)});
  rt_.finalize(s, "");
  json j = read("plain");
  EXPECT_TRUE(child(*child(j[0], "k"), "k.py:1@k") == nullptr);
}

TEST_F(PcSessions, StartAndFinalizeTwice) {
  for (int round = 0; round < 2; ++round) {
    std::string name = "twice" + std::to_string(round);
    SessionId s = rt_.start(config(name, "pcsampling"));
    launch("k", 50);
    fake_->flush();
    rt_.processor().deliver(PcSamples{samples("k", "k.py:1@k", 3)});
    rt_.finalize(s, "");
    json j = read(name);
    const json* line = child(*child(j[0], "k"), "k.py:1@k");
    ASSERT_TRUE(line) << round;
    EXPECT_EQ((*line)["metrics"]["num_samples"], 3) << round;
  }
}

// A backend that samples: what CUPTI hands over only at disable arrives in stop_pc_sampling().
class SamplingBackend : public testing::FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  bool start(RecordProcessor* sink, const BackendOptions& o, std::string& why) override {
    processor = sink;
    return FakeBackend::start(sink, o, why);
  }
  bool start_pc_sampling(const PcSamplingOptions&, std::string&) override {
    ++starts;
    return true;
  }
  void stop_pc_sampling() override {
    if (starts == stops) return;
    ++stops;
    if (at_disable) processor->deliver(PcSamples{*at_disable});
  }
  RecordProcessor* processor = nullptr;
  const PcSampleBatch* at_disable = nullptr;
  int starts = 0, stops = 0;
};

TEST_F(PcSessions, SamplesHandedOverAtDisableReachTheLastSessionsProfile) {
  testing::FakeBackend::Log log;
  auto owned = std::make_unique<SamplingBackend>(&log);
  SamplingBackend* b = owned.get();
  fake_ = b;
  rt_.set_backend_for_testing(std::move(owned));
  PcSampleBatch last = samples("k", "k.py:2@k", 9);
  b->at_disable = &last;
  SessionId s = rt_.start(config("disable", "pcsampling"));
  EXPECT_EQ(b->starts, 1);
  launch("k", 50);
  rt_.finalize(s, "");
  EXPECT_EQ(b->stops, 1) << "the last pcsampling session stops sampling before writing";
  json j = read("disable");
  const json* line = child(*child(j[0], "k"), "k.py:2@k");
  ASSERT_TRUE(line);
  EXPECT_EQ((*line)["metrics"]["num_samples"], 9);
}

// The mode grammar's PC sampling options (options/mode.h).
PcSamplingOptions parse_pc_sampling_mode(const std::string& mode) {
  Mode m = parse_mode(mode);
  const auto* o = std::get_if<PcSamplingOptions>(&m);
  return o != nullptr ? *o : PcSamplingOptions{};
}

TEST(PcSamplingMode, Parses) {
  EXPECT_FALSE(parse_pc_sampling_mode("").enabled);
  EXPECT_FALSE(parse_pc_sampling_mode("graph").enabled);
  EXPECT_THROW(parse_pc_sampling_mode("pcsamplingx"), std::invalid_argument);
  PcSamplingOptions o = parse_pc_sampling_mode("pcsampling");
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.period_log2, 0u);
  // triton.profiler's PCSampling() stringifies to interval=1000 (cycles): 2^10.
  EXPECT_EQ(parse_pc_sampling_mode("pcsampling:interval=1000").period_log2, 10u);
  EXPECT_EQ(parse_pc_sampling_mode("pcsampling:interval=65536").period_log2, 16u);
  EXPECT_EQ(parse_pc_sampling_mode("pcsampling:interval=1").period_log2, 5u);
  o = parse_pc_sampling_mode("pcsampling:interval=131072:buffer_mb=8:sleep_ms=10:adapt=0");
  EXPECT_EQ(o.period_log2, 17u);
  EXPECT_EQ(o.buffer_bytes, uint64_t{8} << 20);
  EXPECT_EQ(o.sleep_span_ms, 10u);
  EXPECT_FALSE(o.adapt);
  EXPECT_THROW(parse_pc_sampling_mode("pcsampling:interval=0"), std::invalid_argument);
  EXPECT_THROW(parse_pc_sampling_mode("pcsampling:interval=abc"), std::invalid_argument);
  EXPECT_THROW(parse_pc_sampling_mode("pcsampling:bogus=1"), std::invalid_argument);
  EXPECT_THROW(parse_pc_sampling_mode("pcsampling:interval"), std::invalid_argument);
}

TEST_F(PcSessions, BadModeIsAnErrorAtStart) {
  EXPECT_THROW(rt_.start(config("bad", "pcsampling:interval=-3")), std::invalid_argument);
}

}  // namespace
}  // namespace proton
