// Golden-output tests: the CLI run in-process on recorded profiles, compared byte for byte with
// tests/fixtures/viewer/golden/<case>.txt. After an intended change, regenerate them with
// PROTON_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace proton::viewer {
namespace {

struct GoldenCase {
  const char* name;
  std::vector<std::string> args;
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.name;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {
 protected:
  // Paths in messages stay relative, so goldens do not depend on the checkout location.
  void SetUp() override { ASSERT_EQ(::chdir(PROTON_VIEWER_FIXTURES), 0); }
};

TEST_P(Golden, MatchesRecordedOutput) {
  const GoldenCase& c = GetParam();
  auto result = testing::run(c.args);
  std::string actual = "status: " + std::to_string(result.status) + "\n--- stdout\n" + result.out +
                       "--- stderr\n" + result.err;
  std::string path = std::string("golden/") + c.name + ".txt";
  if (std::getenv("PROTON_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing " << path << " (run with PROTON_UPDATE_GOLDEN=1)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str());
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, Golden,
    ::testing::Values(
        GoldenCase{"triton_default", {"triton_style.json"}},
        GoldenCase{
            "triton_metrics",
            {"-m", "time/ms,count,util,tflop16/s,gbyte/s,avg_time/us,time/%", "triton_style.json"}},
        GoldenCase{"triton_sorted_file_function",
                   {"-m", "time/us", "-f", "file_function", "--print_sorted", "triton_style.json"}},
        GoldenCase{"triton_depth_threshold",
                   {"-m", "time/ms", "-d", "2", "-t", "1", "triton_style.json"}},
        GoldenCase{"triton_include", {"-m", "time/ms", "-i", "attention", "triton_style.json"}},
        GoldenCase{"triton_exclude",
                   {"-m", "time/ms", "-e", "^matmul$|attention", "triton_style.json"}},
        GoldenCase{"triton_show_metadata", {"--show-metadata", "triton_style.json"}},
        GoldenCase{"triton_diff",
                   {"-m", "time/ms,count", "-diff", "triton_style.json", "triton_style_new.json"}},
        GoldenCase{"triton_list", {"-l", "triton_style.json"}},
        GoldenCase{"proton_metrics",
                   {"-m", "time/us,util,occupancy,regs,per_xcd,count/%", "proton_style.json"}},
        GoldenCase{"proton_full_names", {"--full-names", "-m", "time/ns", "proton_style.json"}},
        GoldenCase{"proton_list", {"--list", "proton_style.json"}},
        GoldenCase{"folded", {"--format", "folded", "-m", "time/ns", "triton_style.json"}},
        GoldenCase{"error_truncated", {"errors/truncated.json"}},
        GoldenCase{"error_not_array", {"errors/not_an_array.json"}},
        GoldenCase{"error_missing_file", {"missing.json"}},
        GoldenCase{"error_unknown_metric", {"-m", "bogus", "triton_style.json"}},
        GoldenCase{"error_bad_regex", {"-i", "(", "triton_style.json"}},
        GoldenCase{"error_unknown_option", {"--bogus", "triton_style.json"}},
        GoldenCase{"error_rate_flamegraph",
                   {"--output-format", "html", "-m", "util", "triton_style.json"}}),
    [](const ::testing::TestParamInfo<GoldenCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace proton::viewer
