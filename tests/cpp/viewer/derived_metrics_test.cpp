// Every derived metric checked against numbers worked out by hand from the fixtures.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/peak_table.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {
namespace {

using testing::find_node;
using testing::fixture;

class Derived : public ::testing::Test {
 protected:
  void SetUp() override { p = hide_metadata(load_hatchet(fixture("triton_style.json"))); }
  double value(const std::string& metric, const std::string& node) {
    std::vector<std::string> warnings;
    auto columns = derive_columns(p, {metric}, warnings);
    int32_t id = node == "ROOT" ? 0 : find_node(p, node);
    EXPECT_GE(id, 0) << node;
    return columns[0].values[static_cast<size_t>(id)];
  }
  Profile p;
};

// H100 SXM as the fixture describes it: 1280-byte bus at 2619 MHz, double data rate.
constexpr double kH100Bandwidth = 2.0 * 5120 / 8 * 2619000e3;
constexpr double kH100Fp16 = 989.4e12;

TEST_F(Derived, TimeUnits) {
  EXPECT_DOUBLE_EQ(value("time/s", "matmul_kernel"), 4e-3);
  EXPECT_DOUBLE_EQ(value("time/ms", "matmul_kernel"), 4.0);
  EXPECT_DOUBLE_EQ(value("time/us", "matmul_kernel"), 4000.0);
  EXPECT_DOUBLE_EQ(value("time/ns", "matmul_kernel"), 4e6);
  EXPECT_DOUBLE_EQ(value("TIME/MS", "ROOT"), 6.0);  // case-insensitive, inclusive at the root
  EXPECT_DOUBLE_EQ(value("time (ns)", "ROOT"), 6e6);
  EXPECT_DOUBLE_EQ(value("time", "matmul"), 4e6);
}

TEST_F(Derived, AverageTime) {
  EXPECT_DOUBLE_EQ(value("avg_time/us", "matmul_kernel"), 400.0);
  EXPECT_DOUBLE_EQ(value("avg_time/ms", "ROOT"), 6.0 / 35);
  EXPECT_DOUBLE_EQ(value("avg_time/ns", "_attn_fwd"), 300000.0);
}

TEST_F(Derived, FlopRates) {
  EXPECT_DOUBLE_EQ(value("flop16/s", "matmul_kernel"), 5e14);
  EXPECT_DOUBLE_EQ(value("gflop16/s", "matmul_kernel"), 5e5);
  EXPECT_DOUBLE_EQ(value("tflop16/s", "matmul_kernel"), 500.0);
  // No width-less "flops" in the file: flop/s sums the widths.
  EXPECT_DOUBLE_EQ(value("tflop/s", "ROOT"), (2e12 + 3e11) / 6e-3 / 1e12);
  EXPECT_TRUE(std::isnan(value("flop16/s", "_Z14vector_add_f32PKfS0_Pfi")));
  EXPECT_THROW(value("flop8/s", "ROOT"), UsageError);
}

TEST_F(Derived, ByteRates) {
  EXPECT_DOUBLE_EQ(value("byte/s", "matmul_kernel"), 2.5e12);
  EXPECT_DOUBLE_EQ(value("gbyte/s", "matmul_kernel"), 2500.0);
  EXPECT_DOUBLE_EQ(value("tbyte/s", "_attn_fwd"), 2.0);
}

TEST_F(Derived, UtilisationOfKernelsAndSubtrees) {
  double matmul = std::max(2e12 / kH100Fp16, 1e10 / kH100Bandwidth);
  double attention = std::max(3e11 / kH100Fp16, 3e9 / kH100Bandwidth);
  double add = 2.4e8 / kH100Bandwidth;
  EXPECT_NEAR(value("util", "matmul_kernel"), matmul / 4e-3, 1e-12);
  EXPECT_NEAR(value("util", "_attn_fwd"), attention / 1.5e-3, 1e-12);
  EXPECT_NEAR(value("util", "ROOT"), (matmul + attention + add) / 6e-3, 1e-12);
}

TEST_F(Derived, Percentages) {
  EXPECT_DOUBLE_EQ(value("time/%", "matmul"), 4.0 / 6.0 * 100);
  EXPECT_DOUBLE_EQ(value("count/%", "_attn_fwd"), 5.0 / 35 * 100);
  EXPECT_DOUBLE_EQ(value("time/%", "ROOT"), 100.0);
}

TEST_F(Derived, UnknownMetricIsAUsageError) {
  EXPECT_THROW(value("nonsense", "ROOT"), UsageError);
  EXPECT_THROW(value("count/ms", "ROOT"), UsageError);  // count has no time unit
  EXPECT_THROW(value("cpu_time/ms", "ROOT"), UsageError);
}

TEST(DerivedCpuTime, ConvertsAndAverages) {
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[
      {"frame":{"name":"s"},"metrics":{"cpu_time (ns)":3000000,"count":3}}]},{}])J");
  std::vector<std::string> warnings;
  auto c = derive_columns(p, {"cpu_time/ms", "avg_cpu_time/us"}, warnings);
  EXPECT_DOUBLE_EQ(c[0].values[1], 3.0);
  EXPECT_DOUBLE_EQ(c[1].values[1], 1000.0);
}

TEST(DerivedCpuTime, AveragesPerRunOfACpuTimedScope) {
  // What proton.cpu_timed_scope writes: its time and one "cpu_calls" per run, no kernel count.
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[
      {"frame":{"name":"s"},"metrics":{"cpu_time (ns)":3000000,"cpu_calls":4},"children":[
        {"frame":{"name":"k"},"metrics":{"count":2}}]}]},{}])J");
  std::vector<std::string> warnings;
  auto c = derive_columns(p, {"avg_cpu_time/us"}, warnings);
  EXPECT_DOUBLE_EQ(c[0].values[1], 750.0);  // per run, not per kernel launch
  Profile bare = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[
      {"frame":{"name":"s"},"metrics":{"cpu_time (ns)":3000000}}]},{}])J");
  try {
    derive_columns(bare, {"avg_cpu_time/us"}, warnings);
    ADD_FAILURE() << "no denominator, no average";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'cpu_calls' or 'count'"), std::string::npos);
  }
}

TEST(DefaultMetric, TimeElseFirstElseNone) {
  EXPECT_EQ(default_metric(parse_hatchet(
                R"J([{"frame":{"name":"ROOT"},"metrics":{"bytes":1,"time (ns)":2}},{}])J")),
            "time/ms");
  EXPECT_EQ(default_metric(parse_hatchet(
                R"J([{"frame":{"name":"ROOT"},"metrics":{"bytes":1,"count":2}},{}])J")),
            "bytes");
  EXPECT_EQ(default_metric(parse_hatchet(
                R"J([{"frame":{"name":"ROOT"},"children":[{"frame":{"name":"a"}}]},{}])J")),
            std::nullopt);
}

TEST(DerivedHip, Gfx942FromTheTable) {
  Profile p = load_hatchet(fixture("proton_style.json"));
  std::vector<std::string> warnings;
  auto c = derive_columns(p, {"flop8/s", "util"}, warnings);
  int32_t gemm = find_node(p, "gemm_fp8");
  EXPECT_DOUBLE_EQ(c[0].values[gemm], 5e9 / 2e-6);
  EXPECT_NEAR(c[1].values[gemm], std::max(5e9 / 2614.9e12, 1e6 / 5.3e12) / 2e-6, 1e-12);
  EXPECT_NEAR(c[1].values[find_node(p, "copy_kernel")], 4e6 / 5.3e12 / 1e-6, 1e-12);
  EXPECT_TRUE(warnings.empty());
}

TEST(PeakTable, ScalesByBoardAndKnowsEveryRequiredArch) {
  DeviceInfo h100_pcie{"CUDA", "0", "90", 114, 1755000, 0, 0};
  EXPECT_NEAR(peak_for(h100_pcie, 8)->flops_per_s, 1979e12 * 114 / 132 * 1755.0 / 1980, 1e6);
  EXPECT_DOUBLE_EQ(peak_for(h100_pcie, 16)->bytes_per_s, 3.35e12);  // table fallback
  for (const char* arch : {"80", "89", "90", "100", "sm_90"}) {
    EXPECT_TRUE(peak_for({"CUDA", "0", arch}, 16).has_value()) << arch;
  }
  for (const char* arch : {"gfx90a", "gfx942", "gfx950", "gfx942:sramecc+:xnack-"}) {
    EXPECT_TRUE(peak_for({"HIP", "0", arch}, 16).has_value()) << arch;
  }
  EXPECT_FALSE(peak_for({"CUDA", "0", "75"}, 16).has_value());
  EXPECT_FALSE(peak_for({"CUDA", "0", "90"}, 4).has_value());
}

TEST(DerivedUtil, UnknownArchWarnsInsteadOfFailing) {
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[{"frame":{"name":"k"},
      "metrics":{"time (ns)":10,"count":1,"device_id":"0","device_type":"CUDA","bytes":8}}]},
      {"CUDA":{"0":{"arch":"75","num_sms":40}}}])J");
  std::vector<std::string> warnings;
  auto c = derive_columns(p, {"util"}, warnings);
  EXPECT_TRUE(std::isnan(c[0].values[1]));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("arch '75'"), std::string::npos);
}

}  // namespace
}  // namespace proton::viewer
