#include <gtest/gtest.h>

#include "test_util.h"
#include "viewer/errors.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {
namespace {

using testing::find_node;
using testing::fixture;

Profile sample() {
  return parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[
    {"frame":{"name":"a"},"children":[
      {"frame":{"name":"wrap"},"metrics":{"time (ns)":1},"children":[
        {"frame":{"name":"k1"},"metrics":{"time (ns)":10}},
        {"frame":{"name":"k2"},"metrics":{"time (ns)":20}}]},
      {"frame":{"name":"k1"},"metrics":{"time (ns)":5}}]},
    {"frame":{"name":"b"},"children":[{"frame":{"name":"k3"},"metrics":{"time (ns)":7}}]},
    {"frame":{"name":"__proton_launch_metadata"},"children":[
      {"frame":{"name":"meta_k"},"metrics":{"time (ns)":100}}]},
    {"frame":{"name":"empty"},"children":[{"frame":{"name":"empty_leaf"}}]}]},{}])J");
}

double time_of(const Profile& p, const std::string& name) {
  return p.inclusive(p.find_metric("time (ns)"))[static_cast<size_t>(find_node(p, name))];
}

TEST(TreeFilter, HidesMetadataButKeepsEmptyScopes) {
  Profile p = hide_metadata(sample());
  EXPECT_EQ(find_node(p, "__proton_launch_metadata"), -1);
  EXPECT_EQ(find_node(p, "meta_k"), -1);
  EXPECT_GE(find_node(p, "empty"), 0);  // a scope that ran nothing is still a row
  EXPECT_GE(find_node(p, "empty_leaf"), 0);
  EXPECT_EQ(time_of(p, "ROOT"), 43);
  EXPECT_TRUE(is_metadata_frame("__proton_launch_metadata:kernel"));
  EXPECT_FALSE(is_metadata_frame("__proton_launch_metadata_x"));
}

TEST(TreeFilter, IncludeKeepsPathsThroughMatches) {
  Profile p = include_paths(hide_metadata(sample()), NamePattern("^wrap$", "-i"));
  EXPECT_GE(find_node(p, "k2"), 0);
  EXPECT_EQ(find_node(p, "b"), -1);
  EXPECT_EQ(time_of(p, "ROOT"), 31);  // wrap's subtree only
  EXPECT_EQ(time_of(p, "a"), 31);
}

TEST(TreeFilter, ExcludeMovesChildrenUpAndMergesSiblings) {
  Profile p = exclude_frames(hide_metadata(sample()), NamePattern("wrap", "-e"));
  EXPECT_EQ(find_node(p, "wrap"), -1);
  int32_t a = find_node(p, "a");
  ASSERT_EQ(p.nodes[a].children.size(), 2u);  // k1 (merged 10 + 5) and k2
  EXPECT_EQ(time_of(p, "k1"), 15);
  EXPECT_EQ(time_of(p, "ROOT"), 42);  // wrap's own 1 ns left with it
}

TEST(TreeFilter, ThresholdKeepsAncestors) {
  Profile p = hide_metadata(sample());
  Column c{"t", p.inclusive(p.find_metric("time (ns)"))};
  auto keep = threshold_mask(p, c, 20, false);
  EXPECT_TRUE(keep[find_node(p, "k2")]);
  EXPECT_TRUE(keep[find_node(p, "wrap")]);
  EXPECT_FALSE(keep[find_node(p, "k3")]);
  EXPECT_FALSE(keep[find_node(p, "b")]);
}

TEST(TreeFilter, PatternsSearchLikePythonAndSurviveHugeNames) {
  EXPECT_THROW(NamePattern("(", "-i"), UsageError);
  NamePattern digits("layer_\\d+$", "-i");
  EXPECT_TRUE(digits.matches("model.layer_12"));
  EXPECT_FALSE(digits.matches("model.layer_x"));
  EXPECT_TRUE(NamePattern("[\\d]", "-i").matches("\\"));  // no rewrite inside brackets
  std::string huge(200000, 'x');
  EXPECT_FALSE(NamePattern(".*foo.*", "-i").matches(huge));
  EXPECT_FALSE(NamePattern("(x|y)*z", "-e").matches(huge));
}

}  // namespace
}  // namespace proton::viewer
