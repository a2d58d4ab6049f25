// Every derived metric checked against numbers worked out by hand from the fixtures.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

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
// Triton's figure: 1513 TFLOP/s FP8 on 114 SMs at 1755 MHz, scaled to 132 SMs at 1980 MHz, halved.
constexpr double kH100Fp16 = 1513e12 * 132 / 114 * 1980 / 1755 / 2;

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

// MI300X as the fixture describes it: 4096 FP8 FLOP per CU per clock, 304 CUs at 2100 MHz.
constexpr double kMi300xFp8 = 4096.0 * 304 * 2100000e3;

TEST(DerivedHip, Gfx942FromTheTable) {
  Profile p = load_hatchet(fixture("proton_style.json"));
  std::vector<std::string> warnings;
  auto c = derive_columns(p, {"flop8/s", "util"}, warnings);
  int32_t gemm = find_node(p, "gemm_fp8");
  EXPECT_DOUBLE_EQ(c[0].values[gemm], 5e9 / 2e-6);
  EXPECT_NEAR(c[1].values[gemm], std::max(5e9 / kMi300xFp8, 1e6 / 5.3e12) / 2e-6, 1e-12);
  EXPECT_NEAR(c[1].values[find_node(p, "copy_kernel")], 4e6 / 5.3e12 / 1e-6, 1e-12);
  EXPECT_TRUE(warnings.empty());
}

TEST(PeakTable, ScalesByBoardAndKnowsEveryRequiredArch) {
  DeviceInfo h100_pcie{"CUDA", "0", "90", 114, 1755000, 0, 0};
  EXPECT_NEAR(peak_for(h100_pcie, 8)->flops_per_s, 1513e12, 1e3);
  EXPECT_NEAR(peak_for({"CUDA", "0", "90", 132, 1980000}, 16)->flops_per_s, kH100Fp16, 1e3);
  EXPECT_DOUBLE_EQ(peak_for(h100_pcie, 16)->bytes_per_s, 3.35e12);  // table fallback
  // No SMs or clock in the map: the reference board's.
  EXPECT_NEAR(peak_for({"CUDA", "0", "100"}, 8)->flops_per_s, 148.0 * 16384 * 1965e6, 1e3);
  for (const char* arch : {"80", "89", "90", "100", "sm_90"}) {
    EXPECT_TRUE(peak_for({"CUDA", "0", arch}, 16).has_value()) << arch;
  }
  for (const char* arch : {"gfx90a", "gfx942", "gfx950", "gfx942:sramecc+:xnack-"}) {
    EXPECT_TRUE(peak_for({"HIP", "0", arch}, 16).has_value()) << arch;
  }
  EXPECT_FALSE(peak_for({"CUDA", "0", "75"}, 16).has_value());
  EXPECT_FALSE(peak_for({"CUDA", "0", "90"}, 4).has_value());
}

// The figures of triton.profiler.specs, written out from its formulas.
TEST(PeakTable, MaxFlopsAndBpsAreTritons) {
  EXPECT_DOUBLE_EQ(max_flops("CUDA", "80", 16, 108, 1410000), 624e12 / 2);
  EXPECT_DOUBLE_EQ(max_flops("CUDA", "80", 8, 1, 1), 624e12);  // fixed whatever the board
  EXPECT_DOUBLE_EQ(max_flops("CUDA", "89", 32, 128, 2520000), 330.3e12 / 4);
  EXPECT_NEAR(max_flops("CUDA", "90", 16, 132, 1980000),
              132.0 / 114 * 1980000 / (1755 * 1e3) * 1513 * 1e12 / 2, 1e3);
  EXPECT_NEAR(max_flops("CUDA", "100", 64, 148, 1965000), 148.0 * 16384 * 1965.0 * 1e6 / 8, 1e3);
  EXPECT_NEAR(max_flops("HIP", "gfx90a", 8, 110, 1700000), 1024.0 * 110 * 1700000 * 1e3, 1e3);
  EXPECT_NEAR(max_flops("HIP", "gfx942", 16, 304, 2100000), 4096.0 * 304 * 2100000 * 1e3 / 2, 1e3);
  EXPECT_NEAR(max_flops("HIP", "gfx950", 8, 256, 2400000), 8192.0 * 256 * 2400000 * 1e3, 1e3);
  EXPECT_DOUBLE_EQ(max_bps("CUDA", "90", 5120, 2619000), 2.0 * 5120 * 2619000 * 1e3 / 8);
  EXPECT_DOUBLE_EQ(max_bps("HIP", "gfx90a", 0, 0), 3.2e12);
  EXPECT_DOUBLE_EQ(max_bps("HIP", "gfx942", 0, 0), 5.3e12);
  EXPECT_DOUBLE_EQ(max_bps("HIP", "gfx950", 0, 0), 8.0e12);
  auto message = [](auto f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { max_flops("CUDA", "75", 16, 1, 1); }), "Unsupported architecture: 75");
  EXPECT_EQ(message([] { max_flops("XPU", "1", 16, 1, 1); }), "Unsupported device type: XPU");
  EXPECT_EQ(message([] { max_bps("HIP", "gfx1100", 1, 1); }), "Unsupported architecture: gfx1100");
  EXPECT_NE(message([] { max_flops("CUDA", "90", 0, 1, 1); }), "no error");
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
