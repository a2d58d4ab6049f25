// proton-viewer --advise: the analyzer (src/analysis) on a profile read from a file, as text and
// as JSON; and the view the viewer hands it.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "viewer/advise_view.h"
#include "viewer/peak_table.h"

namespace proton::viewer {
namespace {

using testing::fixture;
using testing::run;

TEST(AdviseCli, TextRanksFindingsWithFramesEvidenceAndAdvice) {
  auto r = run({"--advise", fixture("advise_profile.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  // The step: 8 ms of kernels in 40 ms of CPU time (32 ms idle); the copy: 6 GB in 20 ms.
  auto launch = r.out.find("1. [high] launch_bound  step");
  auto copy = r.out.find("2. [high] roofline  loss > copy_kernel");
  ASSERT_NE(launch, std::string::npos) << r.out;
  ASSERT_NE(copy, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("busy 20.0% of the scope's 40 ms CPU time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("at stake:  ~32 ms."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("What more would help:"), std::string::npos);
  EXPECT_NE(r.out.find("mode=\"pcsampling\""), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(AdviseCli, JsonListsEveryFinding) {
  auto r = run({"--advise", "--format", "json", fixture("advise_profile.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_GE(json.size(), 3u);
  EXPECT_EQ(json[0]["rule"], "launch_bound");
  EXPECT_EQ(json[0]["frame"], nlohmann::json({"step"}));
  EXPECT_DOUBLE_EQ(json[0]["saving_ns"].get<double>(), 32e6);
  EXPECT_DOUBLE_EQ(json[0]["evidence"]["launches"].get<double>(), 4000);
  EXPECT_EQ(json[1]["rule"], "roofline");
  EXPECT_EQ(json[1]["evidence"]["bound"], "memory");
  EXPECT_EQ(json.back()["rule"], "hint.pcsampling");
  EXPECT_TRUE(json.back()["saving_ns"].is_null());
}

TEST(AdviseCli, HtmlPageListsTheFindings) {
  auto r = run({"--output-format", "html", fixture("advise_profile.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* rule :
       {"\"rule\":\"launch_bound\"", "\"rule\":\"roofline\"", "\"rule\":\"hint.pcsampling\""}) {
    EXPECT_NE(r.out.find(rule), std::string::npos) << rule;
  }
  EXPECT_NE(r.out.find("\"frame\":[\"loss\",\"copy_kernel\"]"), std::string::npos);
}

// A rank's file: ROOT > step > gemm (gemm_ns), one rank of two.
std::string rank_file(const std::string& dir, int rank, int64_t gemm_ns) {
  nlohmann::json gemm = {
      {"frame", {{"name", "gemm"}}},
      {"metrics",
       {{"time (ns)", gemm_ns}, {"count", 1}, {"device_id", "0"}, {"device_type", "CUDA"}}}};
  nlohmann::json step = {{"frame", {{"name", "step"}}}, {"children", {gemm}}};
  nlohmann::json root = {
      {"frame", {{"name", "ROOT"}, {"type", "function"}, {"rank", rank}, {"world_size", 2}}},
      {"metrics", {{"time (ns)", 0}}},
      {"children", {step}}};
  std::string path = dir + "/run.rank" + std::to_string(rank) + ".hatchet";
  std::ofstream(path) << nlohmann::json::array({root, nlohmann::json::object()}).dump();
  return path;
}

TEST(AdviseCli, MergesRanksAndNamesTheStraggler) {
  std::string dir = ::testing::TempDir();
  std::string rank0 = rank_file(dir, 0, 10'000'000);
  std::string rank1 = rank_file(dir, 1, 30'000'000);
  auto r = run({"--advise", "--format", "json", rank0, rank1});
  ASSERT_EQ(r.status, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_FALSE(json.empty());
  // Per rank mean 20 ms, max 30 ms on rank 1: the other waits 10 ms. The inner frame explains
  // the step, so only it is named.
  EXPECT_EQ(json[0]["rule"], "straggler");
  EXPECT_EQ(json[0]["frame"], nlohmann::json({"step", "gemm"}));
  EXPECT_EQ(json[0]["evidence"]["slowest_rank"], 1);
  EXPECT_DOUBLE_EQ(json[0]["saving_ns"].get<double>(), 10e6);
  // One rank alone: the analyzer asks for the others.
  auto one = run({"--advise", rank1});
  EXPECT_NE(one.out.find("This is rank 1 of 2"), std::string::npos) << one.out;
}

TEST(AdviseCli, IncludeNarrowsTheAnalysis) {
  auto r = run({"--advise", "--format", "json", "-i", "loss", fixture("advise_profile.json")});
  ASSERT_EQ(r.status, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  ASSERT_FALSE(json.empty());
  EXPECT_EQ(json[0]["rule"], "roofline");
  for (const auto& f : json)
    EXPECT_NE(f["rule"], "launch_bound");
}

TEST(AdviseCli, RefusesFlameGraphFormats) {
  auto r = run({"--advise", "--output-format", "html", fixture("advise_profile.json")});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--advise writes text or --format json"), std::string::npos);
}

TEST(AdviseCli, ABadFileIsOneLineError) {
  auto r = run({"--advise", fixture("does_not_exist.json")});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty());
}

TEST(AdviseView, CarriesDevicesPeaksAndDisplayNames) {
  Profile p = load_hatchet(fixture("advise_profile.json"));
  p.nodes[static_cast<size_t>(testing::find_node(p, "add_kernel"))].name = "_ZN7cutlass6KernelEv";
  analysis::ProfileView v = analysis_view(p);
  ASSERT_EQ(v.devices.size(), 1u);
  // The peak table's figures for the fixture's device (an H100: 132 SMs at 1980 MHz, the
  // formula triton.profiler's specs use, ~988 TFLOP/s at 16 bits); 2 x 5120 bits / 8 x
  // 2619 MHz = 3.35 TB/s.
  EXPECT_DOUBLE_EQ(v.devices[0].peak_flops_per_s[1], max_flops("CUDA", "90", 16, 132, 1980000));
  EXPECT_NEAR(v.devices[0].peak_flops_per_s[1], 988.2e12, 1e11);
  EXPECT_NEAR(v.devices[0].peak_bytes_per_s, 3.352e12, 1e9);
  EXPECT_EQ(v.nodes[2].name, "cutlass::Kernel");
  EXPECT_TRUE(v.nodes[2].is_kernel());
  EXPECT_FALSE(v.nodes[1].is_kernel());
}

}  // namespace
}  // namespace proton::viewer
