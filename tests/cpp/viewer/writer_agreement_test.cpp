// Every Hatchet writer writes one tree with the same bytes: the viewer's writer and the rank
// merge's streaming writer against the session's reference bytes (hatchet_same_tree.h), whose
// names hold control characters, DEL and invalid UTF-8 and whose metrics hold NaN and +-inf.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>

#include "../hatchet_same_tree.h"
#include "test_util.h"
#include "viewer/hatchet_reader.h"
#include "viewer/profile_writer.h"
#include "viewer/rank_merge.h"

namespace proton::viewer {
namespace {

using testing::find_node;
namespace same_tree = ::proton::same_tree;

double stored(const Profile& p, const char* metric, int32_t node) {
  int32_t m = p.find_metric(metric);
  if (m < 0 || node < 0) return 0;
  return p.stored(m)[static_cast<size_t>(node)];
}

// The odd node keeps its name, its string metric and its non-finite values.
void expect_odd_node(const Profile& p, const char* suffix = "") {
  int32_t odd = find_node(p, std::string(same_tree::kOddName));
  ASSERT_GE(odd, 0);
  EXPECT_EQ(p.nodes[static_cast<size_t>(odd)].text_of("s"), same_tree::kOddText);
  EXPECT_TRUE(std::isnan(stored(p, (std::string("x") + suffix).c_str(), odd)));
  EXPECT_EQ(stored(p, (std::string("up") + suffix).c_str(), odd),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(stored(p, (std::string("down") + suffix).c_str(), odd),
            -std::numeric_limits<double>::infinity());
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(HatchetWriters, ViewerWritesTheSessionsBytes) {
  Profile p = parse_hatchet(same_tree::kJson);
  expect_odd_node(p);
  EXPECT_EQ(to_hatchet_json(p), same_tree::kJson);
}

// The session's msgpack reads to the profile its JSON reads to: written back, the same JSON.
TEST(HatchetWriters, SessionMsgpackReadsBackToTheSameJson) {
  Profile p = parse_hatchet(same_tree::bytes(same_tree::kMsgpackHex));
  expect_odd_node(p);
  EXPECT_EQ(to_hatchet_json(p), same_tree::kJson);
}

TEST(HatchetWriters, ViewerOutputReadsBackIdentically) {
  Profile p = parse_hatchet(same_tree::kJson);
  Profile back = parse_hatchet(to_hatchet_json(p));
  expect_odd_node(back);
  ASSERT_EQ(back.nodes.size(), p.nodes.size());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].name, p.nodes[i].name);
    EXPECT_EQ(back.nodes[i].text, p.nodes[i].text);
  }
}

// The rank merge streams its result without building it; the bytes are those of the built one.
TEST(HatchetWriters, RankMergeWritesTheBytesOfItsResult) {
  RankMerger m;
  std::string why;
  ASSERT_TRUE(m.add(parse_hatchet(same_tree::kJson), "a", why)) << why;
  ASSERT_TRUE(m.add(parse_hatchet(same_tree::bytes(same_tree::kMsgpackHex)), "b", why)) << why;
  std::string path = std::filesystem::temp_directory_path() / "proton_writer_agreement.hatchet";
  m.write_json(path);
  std::string streamed = read_all(path);
  std::filesystem::remove(path);
  EXPECT_EQ(streamed, to_hatchet_json(m.result()));
  Profile back = parse_hatchet(streamed);
  // Sums over the two ranks: NaN stays NaN, +-inf stays +-inf.
  expect_odd_node(back);
  expect_odd_node(back, ":max (exc)");
}

}  // namespace
}  // namespace proton::viewer
