// The analyzer as a whole: every rule run, findings ranked, JSON and text shapes.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "analysis/advise.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// A launch-bound forward (6 ms at stake), a memory-bound kernel (8.75 ms), a hot line without
// kernel time (no estimate).
ProfileView mixed() {
  ProfileView v = with_root();
  v.devices.push_back(testing::h100());
  int32_t fwd = v.add_node(0, "forward");
  for (const char* name : {"add", "mul", "relu"})
    kernel(v, fwd, name, 1000, 1000 * 2'000.0);
  v.set(kernel(v, v.add_node(0, "loss"), "copy", 10, 10e6), "bytes", 3e9);
  int32_t k = v.add_kernel(0, "sampled", "0");
  int32_t line = v.add_node(k, "/src/s.py:7@sampled");
  v.set(line, "num_samples", 500);
  v.set(line, "stalled_long_scoreboard", 500);
  return v;
}

TEST(Advise, RanksBySavingThenFindingsWithoutOneThenHints) {
  auto found = advise(mixed());
  ASSERT_GE(found.size(), 4u);
  EXPECT_EQ(found[0].rule, "roofline");
  EXPECT_EQ(found[1].rule, "launch_bound");
  EXPECT_GT(*found[0].saving_ns, *found[1].saving_ns);
  EXPECT_EQ(found[2].rule, "stall_hot_line");
  EXPECT_FALSE(found[2].saving_ns.has_value());
  for (size_t i = 3; i < found.size(); ++i)
    EXPECT_TRUE(found[i].rule.starts_with("hint.")) << found[i].rule;
}

TEST(Advise, JsonListsTheDocumentedFields) {
  auto json = nlohmann::json::parse(findings_json(advise(mixed())));
  ASSERT_TRUE(json.is_array());
  for (const auto& item : json) {
    for (const char* key : {"rule", "severity", "frame", "evidence", "suggestion", "saving_ns"})
      EXPECT_TRUE(item.contains(key)) << key;
    EXPECT_TRUE(item["evidence"].is_object());
    EXPECT_TRUE(item["saving_ns"].is_null() || item["saving_ns"].is_number());
  }
  EXPECT_EQ(json[0]["rule"], "roofline");
  EXPECT_EQ(json[0]["frame"], nlohmann::json({"loss", "copy"}));
  EXPECT_EQ(json[0]["evidence"]["bound"], "memory");
  EXPECT_EQ(json[0]["severity"], "high");
  EXPECT_TRUE(json.back()["saving_ns"].is_null());
}

TEST(Advise, TextNumbersTheFindingsAndListsHintsApart) {
  std::string text = findings_text(advise(mixed()), "run.hatchet", 2);
  EXPECT_NE(text.find("Advice for run.hatchet"), std::string::npos);
  EXPECT_NE(text.find("1. [high] roofline  loss > copy"), std::string::npos);
  EXPECT_NE(text.find("2. [high] launch_bound  forward"), std::string::npos);
  EXPECT_EQ(text.find("3. "), std::string::npos);
  EXPECT_NE(text.find("(1 more; --format json lists all)"), std::string::npos);
  EXPECT_NE(text.find("What more would help:"), std::string::npos);
  EXPECT_NE(text.find("cpu_timed_scope"), std::string::npos);
}

// Values a damaged or hand-written file may hold: infinities, negatives, zero counts. Every
// rule still returns (ASan and UBSan watch), and the JSON stays parseable.
TEST(Advise, OddValuesNeverBreakTheRules) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double odd : {inf, -inf, -1.0, 0.0, 1e308, kNoValue}) {
    ProfileView v = mixed();
    for (size_t i = 0; i < v.nodes.size(); ++i) {
      for (const char* m : {"time (ns)", "count", "bytes", "num_samples", "cpu_time (ns)",
                            "time:imbalance (exc)", "time:max (ns) (exc)", "time:mean (ns) (exc)"})
        v.set(static_cast<int32_t>(i), m, odd);
    }
    auto found = advise(v);
    auto json = nlohmann::json::parse(findings_json(found), nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << odd;
    (void)findings_text(found, "odd", 10);
  }
}

TEST(Advise, AnEmptyViewHasNoFindings) {
  EXPECT_TRUE(advise(ProfileView{}).empty());
  EXPECT_EQ(findings_json({}), "[]\n");
}

}  // namespace
}  // namespace proton::analysis
