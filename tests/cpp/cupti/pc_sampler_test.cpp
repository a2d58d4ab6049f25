// The sampler's reaction to what CUPTI's PC-sampling calls answer, on the CPU: a table of fake
// CUPTI functions stands in for libcupti, and tick() runs one round of the drain thread. What
// is checked is ours (counting a full buffer, raising the period, enabling again); what the
// fake answers follows cupti_pcsampling.h (a full buffer: GetData returns
// CUPTI_ERROR_OUT_OF_MEMORY and sets hardwareBufferFull).
#include <gtest/gtest.h>

#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "backends/cupti/pc_sampling.h"

namespace proton::cupti {
namespace {

// One GetData answer.
struct Answer {
  CUptiResult result = CUPTI_SUCCESS;
  bool full = false;
  uint32_t samples = 0;   // on one PC of "kern", when > 0
  uint32_t non_user = 0;  // CUPTI's non-user total: samples with no PC record
};

// The fake's state: plain globals, because CUPTI's table holds plain function pointers.
struct Fake {
  std::deque<Answer> answers;
  bool enabled = false;
  int enables = 0;
  int disables = 0;
  bool full_at_disable = false;
  std::vector<uint32_t> periods;  // every period set, at configuration or live
  CUpti_PCSamplingData* at_disable = nullptr;
};
Fake g;

CUptiResult fake_enable(CUpti_PCSamplingEnableParams*) {
  g.enabled = true;
  ++g.enables;
  return CUPTI_SUCCESS;
}
CUptiResult fake_disable(CUpti_PCSamplingDisableParams*) {
  if (!g.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  g.enabled = false;
  ++g.disables;
  if (g.at_disable != nullptr) g.at_disable->hardwareBufferFull = g.full_at_disable ? 1 : 0;
  return CUPTI_SUCCESS;
}
CUptiResult fake_num_reasons(CUpti_PCSamplingGetNumStallReasonsParams* p) {
  *p->numStallReasons = 2;
  return CUPTI_SUCCESS;
}
CUptiResult fake_reasons(CUpti_PCSamplingGetStallReasonsParams* p) {
  const char* names[] = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard",
                         "smsp__pcsamp_warps_issue_stalled_selected"};
  for (size_t i = 0; i < 2; ++i) {
    p->stallReasonIndex[i] = static_cast<uint32_t>(3 + 4 * i);  // hardware indices 3 and 7
    std::snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", names[i]);
  }
  return CUPTI_SUCCESS;
}
CUptiResult fake_configure(CUpti_PCSamplingConfigurationInfoParams* p) {
  if (!g.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  for (size_t i = 0; i < p->numAttributes; ++i) {
    CUpti_PCSamplingConfigurationInfo& a = p->pPCSamplingConfigurationInfo[i];
    if (a.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD) {
      g.periods.push_back(a.attributeData.samplingPeriodData.samplingPeriod);
    }
    if (a.attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER) {
      g.at_disable = static_cast<CUpti_PCSamplingData*>(
          a.attributeData.samplingDataBufferData.samplingDataBuffer);
    }
  }
  return CUPTI_SUCCESS;
}
CUptiResult fake_get_data(CUpti_PCSamplingGetDataParams* p) {
  auto* d = static_cast<CUpti_PCSamplingData*>(p->pcSamplingData);
  if (!g.enabled) return CUPTI_ERROR_INVALID_OPERATION;
  if (g.answers.empty()) return CUPTI_SUCCESS;
  Answer a = g.answers.front();
  g.answers.pop_front();
  d->hardwareBufferFull = a.full ? 1 : 0;
  if (a.samples > 0) {
    static char kern[] = "kern";
    CUpti_PCSamplingPCData& pc = d->pPcData[0];
    pc.cubinCrc = 1;
    pc.pcOffset = 0x10;
    pc.functionName = kern;
    pc.stallReasonCount = 1;
    pc.stallReason[0] = {3, a.samples};
    d->totalNumPcs = 1;
    d->totalSamples = a.samples;
  }
  if (a.non_user > 0) {
    d->totalSamples += a.non_user;
    d->nonUsrKernelsTotalSamples = a.non_user;
  }
  return a.result;
}
CUptiResult fake_result_string(CUptiResult, const char** s) {
  *s = "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUresult fake_current(CUcontext* ctx) {
  *ctx = reinterpret_cast<CUcontext>(0x1000);
  return CUDA_SUCCESS;
}

class PcSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g = Fake{};
    api_.cuptiGetResultString = fake_result_string;
    api_.cuptiPCSamplingEnable = fake_enable;
    api_.cuptiPCSamplingDisable = fake_disable;
    api_.cuptiPCSamplingSetConfigurationAttribute = fake_configure;
    api_.cuptiPCSamplingGetData = fake_get_data;
    api_.cuptiPCSamplingGetNumStallReasons = fake_num_reasons;
    api_.cuptiPCSamplingGetStallReasons = fake_reasons;
    api_.path = "fake-libcupti";
    driver_.cuCtxGetCurrent = fake_current;
    // 2^5 cycles into 1 MB: a rate no buffer that small holds. The thread never wakes on its
    // own (an hour between drains): the test runs its rounds with tick().
    options_.enabled = true;
    options_.period_log2 = 5;
    options_.buffer_bytes = uint64_t{1} << 20;
    options_.drain_ms = 3600 * 1000;
  }
  void TearDown() override { sampler_.stop(); }

  bool start() {
    std::string why;
    bool ok = sampler_.start(api_, driver_, nullptr, options_, 132, why);
    EXPECT_TRUE(ok) << why;
    return ok;
  }

  CuptiApi api_;
  DriverApi driver_;
  PcSamplingOptions options_;
  PcSampler sampler_;
};

TEST_F(PcSamplerTest, AUserBufferTooSmallForTheIntervalRaisesThePeriodAtStart) {
  ASSERT_TRUE(start());
  // The first period from 2^5 up that 1 MB holds by the rate model.
  uint32_t fits = period_after_full(4, options_.buffer_bytes, options_.sleep_span_ms, 132);
  EXPECT_EQ(g.periods, (std::vector<uint32_t>{fits}));
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.asked_period_log2, 5u);
  EXPECT_EQ(s.period_log2, fits);
}

TEST_F(PcSamplerTest, AFullBufferAnsweredAsOutOfMemoryIsCountedOnceAndSaid) {
  options_.adapt = false;  // the user's 2^5 into 1 MB stands: it fills
  ASSERT_TRUE(start());
  EXPECT_EQ(g.periods, (std::vector<uint32_t>{5}));
  ::testing::internal::CaptureStderr();
  g.answers = {{CUPTI_ERROR_OUT_OF_MEMORY, true, 0}};
  sampler_.tick();
  std::string err = ::testing::internal::GetCapturedStderr();
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.buffer_full, 1u) << "the error is the full buffer, not 'nothing this time'";
  EXPECT_EQ(s.get_data_errors, 0u);
  EXPECT_NE(err.find("filled at 2^5"), std::string::npos) << err;
  // CUPTI repeats the answer at every GetData until disable: one fill.
  g.answers = {{CUPTI_ERROR_OUT_OF_MEMORY, true, 0}};
  sampler_.tick();
  EXPECT_EQ(sampler_.stats().buffer_full, 1u);
  // The running context is left alone: no disable or enable from the drain thread.
  EXPECT_EQ(g.enables, 1);
  EXPECT_EQ(g.disables, 0);
}

TEST_F(PcSamplerTest, TheOutOfMemoryErrorAloneIsAFullBufferToo) {
  options_.adapt = false;
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_ERROR_OUT_OF_MEMORY, false, 0}};
  sampler_.tick();
  EXPECT_EQ(sampler_.stats().buffer_full, 1u);
}

TEST_F(PcSamplerTest, AFillIsAnsweredByTheNextSessionStartingSlower) {
  // A buffer the rate model says holds 2^16 fills anyway (a denser workload than the model's).
  options_.period_log2 = 16;
  options_.buffer_bytes = pc_buffer_bytes_needed(16, options_.sleep_span_ms, 132);
  ASSERT_TRUE(start());
  EXPECT_EQ(g.periods.back(), 16u);
  g.answers = {{CUPTI_ERROR_OUT_OF_MEMORY, true, 0}};
  sampler_.tick();
  uint32_t next = period_after_full(16, options_.buffer_bytes, options_.sleep_span_ms, 132);
  EXPECT_EQ(sampler_.stats().next_period_log2, next);
  sampler_.stop();
  ASSERT_TRUE(start());
  EXPECT_EQ(g.periods.back(), next);
  EXPECT_EQ(sampler_.stats().period_log2, next);
  sampler_.stop();
  options_.adapt = false;  // ...unless the user keeps the period
  ASSERT_TRUE(start());
  EXPECT_EQ(g.periods.back(), 16u);
}

TEST_F(PcSamplerTest, OtherErrorsAreCountedApartFromFullBuffers) {
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_ERROR_UNKNOWN, false, 0}};
  sampler_.tick();
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.get_data_errors, 1u);
  EXPECT_EQ(s.buffer_full, 0u);
}

TEST_F(PcSamplerTest, SamplesOfADrainAreCounted) {
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_SUCCESS, false, 9}};
  sampler_.tick();
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.samples, 9u);
  EXPECT_EQ(s.pc_records, 1u);
}

TEST_F(PcSamplerTest, AFullBufferSeenOnlyAtDisableIsSaidToBeLate) {
  ASSERT_TRUE(start());
  g.full_at_disable = true;
  ::testing::internal::CaptureStderr();
  sampler_.stop();
  std::string err = ::testing::internal::GetCapturedStderr();
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.buffer_full, 1u);
  EXPECT_NE(err.find("filled 1 time(s)"), std::string::npos) << err;
  EXPECT_NE(err.find("1 of the fills were seen at the end"), std::string::npos) << err;
}

TEST_F(PcSamplerTest, ALaterSessionWithOnlyNonUserSamplesSaysWhy) {
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_SUCCESS, false, 9}};
  sampler_.tick();
  sampler_.stop();
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_SUCCESS, false, 0, 40}};
  sampler_.tick();
  ::testing::internal::CaptureStderr();
  sampler_.stop();
  std::string err = ::testing::internal::GetCapturedStderr();
  PcSamplingStats s = sampler_.stats();
  EXPECT_EQ(s.non_user, 40u);
  EXPECT_TRUE(s.all_non_user_after_earlier);
  EXPECT_NE(err.find("all 40 samples of this session as non-user"), std::string::npos) << err;
  EXPECT_NE(err.find("earlier PC-sampling session"), std::string::npos) << err;
}

TEST_F(PcSamplerTest, AFirstSessionOfOnlyNonUserSamplesIsNotBlamedOnAnEarlierOne) {
  ASSERT_TRUE(start());
  g.answers = {{CUPTI_SUCCESS, false, 0, 40}};  // cuBLAS-like kernels CUPTI calls non-user
  sampler_.tick();
  ::testing::internal::CaptureStderr();
  sampler_.stop();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_FALSE(sampler_.stats().all_non_user_after_earlier);
}

TEST(PcSizes, AUserBufferIsKeptAndThePeriodRaisedUnlessAdaptIsOff) {
  PcSamplingOptions o;
  o.period_log2 = 5;
  o.buffer_bytes = uint64_t{1} << 20;
  PcSizes s = choose_pc_sizes(o, 132);
  EXPECT_EQ(s.buffer_bytes, o.buffer_bytes);
  EXPECT_GT(s.period_log2, 5u);
  EXPECT_LE(pc_buffer_bytes_needed(s.period_log2, s.sleep_span_ms, 132), o.buffer_bytes);
  EXPECT_NE(s.note.find("raised from 2^5"), std::string::npos) << s.note;
  o.adapt = false;
  EXPECT_EQ(choose_pc_sizes(o, 132).period_log2, 5u);
}

TEST(PcSizes, AFullBufferJumpsToThePeriodTheBufferHolds) {
  // 1 MB at CUPTI's 20 ms span on 132 SMs holds 2^18 by the rate model, not 2^6.
  uint32_t p = period_after_full(5, uint64_t{1} << 20, 20, 132);
  EXPECT_GE(p, 6u);
  EXPECT_LE(pc_buffer_bytes_needed(p, 20, 132), uint64_t{1} << 20);
  EXPECT_GT(pc_buffer_bytes_needed(p - 1, 20, 132), uint64_t{1} << 20);
  // A buffer sized for its period that filled anyway (a burst): one step.
  PcSizes d = choose_pc_sizes(PcSamplingOptions{}, 132);
  EXPECT_EQ(period_after_full(d.period_log2, d.buffer_bytes, d.sleep_span_ms, 132),
            d.period_log2 + 1);
  EXPECT_EQ(period_after_full(31, 1, 20, 132), 31u);
}

}  // namespace
}  // namespace proton::cupti
