// The measured roofline (roofline.h) on a hand-made profile: a memory-bound copy and a
// compute-bound GEMM under one scope, with counters as mode="counters" writes them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "test_util.h"
#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/roofline.h"

namespace proton::viewer {
namespace {

using testing::find_node;

// copy: 1 ms, 2 GB through DRAM (declared 2 GB). gemm: 3 ms, 0.1 GB measured but 1 GB
// declared (a wrong launch_metadata), 40% SM throughput; copy at 80%.
constexpr const char* kProfile = R"J([{"frame":{"name":"ROOT"},"metrics":{},"children":[
  {"frame":{"name":"step"},"metrics":{},"children":[
    {"frame":{"name":"copy"},"metrics":{"time (ns)":1000000,"count":1,"device_id":"0",
      "device_type":"CUDA","bytes":2000000000,"dram__bytes_read.sum":1.0e9,
      "dram__bytes_write.sum":1.0e9,"counter time (ns)":1000000,"lts__t_sectors.sum":6.25e7,
      "sm__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)":8.0e7}},
    {"frame":{"name":"gemm"},"metrics":{"time (ns)":3000000,"count":1,"device_id":"0",
      "device_type":"CUDA","bytes":1000000000,"flops16":1.0e12,"dram__bytes_read.sum":0.8e8,
      "dram__bytes_write.sum":0.2e8,"counter time (ns)":3000000,
      "sm__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)":1.2e8,
      "sm__sass_thread_inst_executed_op_ffma_pred_on.sum":5.0e9}}]}]},
  {"CUDA":{"0":{"arch":"90","num_sms":132,"clock_rate":1980000,"memory_clock_rate":2619000,
    "bus_width":5120}}}])J";

constexpr double kFixtureBandwidth = 2.0 * 5120 / 8 * 2619000e3;

class Roofline : public ::testing::Test {
 protected:
  void SetUp() override { p = parse_hatchet(kProfile); }
  double value(const std::string& metric, const std::string& node) {
    std::vector<std::string> warnings;
    auto columns = derive_columns(p, {metric}, warnings);
    int32_t id = node == "ROOT" ? 0 : find_node(p, node);
    return columns[0].values[static_cast<size_t>(id)];
  }
  Profile p;
};

TEST_F(Roofline, TimeWeightedCounterByItsName) {
  const std::string m = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
  EXPECT_DOUBLE_EQ(value(m, "copy"), 80);
  EXPECT_DOUBLE_EQ(value(m, "gemm"), 40);
  EXPECT_DOUBLE_EQ(value(m, "step"), (8.0e7 + 1.2e8) / 4e6);  // 50, not the mean 60
}

TEST_F(Roofline, MeasuredBandwidthAndPeakShare) {
  EXPECT_DOUBLE_EQ(value("dram_gbyte/s", "copy"), 2000);
  EXPECT_DOUBLE_EQ(value("dram_byte/s", "gemm"), 1e8 / 3e-3);
  EXPECT_NEAR(value("dram_peak%", "copy"), 100.0 * 2e9 / kFixtureBandwidth / 1e-3, 1e-9);
  EXPECT_NEAR(value("dram_peak%", "step"), 100.0 * (2.1e9 / kFixtureBandwidth) / 4e-3, 1e-9);
  EXPECT_DOUBLE_EQ(value("sass_gflop/s", "gemm"), 1e10 / 3e-3 / 1e9);
}

TEST_F(Roofline, L2HitRateEstimate) {
  // copy: 62.5M sectors (2 GB) served, 1 GB of them read from DRAM -> half hit.
  EXPECT_DOUBLE_EQ(value("l2_hit%", "copy"), 50);
  EXPECT_TRUE(std::isnan(value("l2_hit%", "gemm")));  // no L2 counter on this node
}

TEST_F(Roofline, DeclaredAndMeasuredDisagreeingByMoreThanTwice) {
  EXPECT_TRUE(std::isnan(value("bytes_mismatch", "copy")));  // 2 GB both ways
  EXPECT_DOUBLE_EQ(value("bytes_mismatch", "gemm"), 10);     // 1 GB declared, 0.1 GB measured
  EXPECT_DOUBLE_EQ(mismatch(1, 3), 1.0 / 3);
  EXPECT_TRUE(std::isnan(mismatch(1, 1.9)));
  EXPECT_TRUE(std::isnan(mismatch(kAbsent, 1)));
}

TEST_F(Roofline, ExpandsToWhatTheProfileCanGive) {
  auto r = expand_roofline(p);
  for (const char* want :
       {"time/ms", "gbyte/s", "dram_gbyte/s", "dram_peak%", "tflop/s", "sass_tflop/s", "util",
        "bytes_mismatch", "flops_mismatch", "sm__throughput.avg.pct_of_peak_sustained_elapsed"}) {
    EXPECT_NE(std::find(r.begin(), r.end(), want), r.end()) << want;
  }
  std::vector<std::string> warnings;
  auto columns = derive_columns(p, {"roofline"}, warnings);
  EXPECT_EQ(columns.size(), r.size());
}

TEST(RooflineMissing, SaysWhatIsNeeded) {
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[{"frame":{"name":"k"},
      "metrics":{"time (ns)":10,"count":1,"device_id":"0","device_type":"CUDA"}}]},{}])J");
  std::vector<std::string> warnings;
  try {
    derive_columns(p, {"dram_gbyte/s"}, warnings);
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("counters"), std::string::npos) << e.what();
  }
  EXPECT_EQ(expand_roofline(p), std::vector<std::string>{"time/ms"});
}

}  // namespace
}  // namespace proton::viewer
