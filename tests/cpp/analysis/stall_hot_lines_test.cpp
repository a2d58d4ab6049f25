#include <gtest/gtest.h>

#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

// A 10 ms kernel with a hot line and a cold one.
ProfileView sampled(const char* hot_reason) {
  ProfileView v = with_root();
  int32_t k = kernel(v, 0, "attention", 1, 10e6);
  int32_t hot = v.add_node(k, "/src/attn.py:41@attention");
  v.set(hot, "num_samples", 1000);
  v.set(hot, hot_reason, 700);
  v.set(hot, "stalled_selected", 200);  // issuing: not a stall
  v.set(hot, "stalled_wait", 100);
  int32_t cold = v.add_node(k, "/src/attn.py:44@attention");
  v.set(cold, "num_samples", 40);
  v.set(cold, "stalled_long_scoreboard", 40);
  return v;
}

TEST(StallHotLines, NamesTheHotLineAndItsStallFamily) {
  auto found = stall_hot_lines(sampled("stalled_long_scoreboard"));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "stall_hot_line");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"attention", "/src/attn.py:41@attention"}));
  EXPECT_EQ(std::get<std::string>(f.evidence[0].second), "memory");
  EXPECT_EQ(std::get<std::string>(f.evidence[1].second), "long_scoreboard");
  EXPECT_DOUBLE_EQ(f.number_of("stalled_samples"), 800);
  // 800 stalled of the kernel's 1,040 samples, of 10 ms.
  EXPECT_DOUBLE_EQ(*f.saving_ns, 10e6 * 800 / 1040);
  EXPECT_NE(f.suggestion.find("num_stages"), std::string::npos);
}

TEST(StallHotLines, AdvisesPerFamily) {
  auto found = stall_hot_lines(sampled("stalled_barrier"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(std::get<std::string>(found[0].evidence[0].second), "synchronization");
  EXPECT_NE(found[0].suggestion.find("barrier"), std::string::npos);
}

TEST(StallHotLines, QuietWithoutEnoughSamples) {
  ProfileView v = with_root();
  int32_t k = kernel(v, 0, "k", 1, 10e6);
  int32_t line = v.add_node(k, "/src/k.py:3@k");
  v.set(line, "num_samples", kMinSamples - 1);
  v.set(line, "stalled_long_scoreboard", kMinSamples - 1);
  EXPECT_TRUE(stall_hot_lines(v).empty());
}

TEST(StallHotLines, QuietWhenTheLineIssues) {
  ProfileView v = with_root();
  int32_t k = kernel(v, 0, "k", 1, 10e6);
  int32_t line = v.add_node(k, "/src/k.py:3@k");
  v.set(line, "num_samples", 1000);
  v.set(line, "stalled_selected", 1000);
  EXPECT_TRUE(stall_hot_lines(v).empty());
}

}  // namespace
}  // namespace proton::analysis
