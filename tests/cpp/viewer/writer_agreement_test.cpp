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
#include "viewer/advise_view.h"
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

// The session's launch facts read back as properties of the kernel's node (shown as stored,
// never rolled up into its parents), in JSON and msgpack, and the device map's SM limits reach
// the analyzer's view.
TEST(HatchetWriters, LaunchFactsAndDeviceLimitsReadBack) {
  for (const std::string& bytes :
       {std::string(same_tree::kJson), same_tree::bytes(same_tree::kMsgpackHex)}) {
    Profile p = parse_hatchet(bytes);
    int32_t k = find_node(p, "k");
    ASSERT_GE(k, 0);
    EXPECT_EQ(stored(p, "grid_x", k), 264);
    EXPECT_EQ(stored(p, "block_x", k), 384);
    EXPECT_EQ(stored(p, "cluster_x", k), 2);
    EXPECT_EQ(stored(p, "registers_per_thread", k), 168);
    EXPECT_EQ(stored(p, "dynamic_shared_bytes", k), 200704);
    int32_t regs = p.find_metric("registers_per_thread");
    ASSERT_GE(regs, 0);
    EXPECT_EQ(p.metrics[static_cast<size_t>(regs)].kind, MetricKind::kProperty);
    EXPECT_TRUE(is_absent(p.inclusive(regs)[0]));  // the root sums nothing
    ASSERT_EQ(p.devices.size(), 1u);
    const DeviceInfo& d = p.devices[0];
    EXPECT_EQ(d.warp_size, 32);
    EXPECT_EQ(d.max_threads_per_sm, 2048);
    EXPECT_EQ(d.max_warps_per_sm, 64);
    EXPECT_EQ(d.max_blocks_per_sm, 32);
    EXPECT_EQ(d.registers_per_sm, 65536);
    EXPECT_EQ(d.shared_memory_per_sm, 233472);
    EXPECT_EQ(d.reserved_shared_memory_per_block, 1024);
    analysis::ProfileView v = analysis_view(p);
    ASSERT_EQ(v.devices.size(), 1u);
    EXPECT_EQ(v.devices[0].max_warps_per_sm, 64);
    EXPECT_EQ(v.devices[0].shared_memory_per_sm, 233472);
  }
}

TEST(HatchetWriters, FilesWithoutDeviceLimitsReadAsUnknown) {
  // A device map as triton.profiler (and Proton before the limits) writes it.
  Profile p = parse_hatchet(
      R"([{"frame":{"name":"ROOT","type":"function"},"metrics":{},"children":[]},)"
      R"({"CUDA":{"0":{"arch":"90","num_sms":132,"clock_rate":1,"memory_clock_rate":1,)"
      R"("bus_width":1}}}])");
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].max_threads_per_sm, 0);
  EXPECT_EQ(p.devices[0].registers_per_sm, 0);
  EXPECT_EQ(analysis_view(p).devices[0].max_warps_per_sm, 0);
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
