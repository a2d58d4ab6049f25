// The full-tree reader (parse_hatchet) and the compact rank-file reader (parse_rank_file) read
// one grammar: every seed of the viewer's fuzzers, JSON and msgpack, whole and cut short, gets
// the same answer from both: the same refusal (byte offset and message) or the same tree, metrics
// (with their kinds), string metrics, devices and rank block.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "viewer/hatchet_reader.h"
#include "viewer/merge.h"
#include "viewer/profile_writer.h"
#include "viewer/rank_file.h"
#include "viewer/rank_merge.h"

namespace proton::viewer {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "ok" or "offset: message".
template <class Parse>
std::string outcome(Parse&& parse) {
  try {
    parse();
    return "ok";
  } catch (const InputError& e) {
    return std::to_string(e.offset()) + ": " + e.what();
  }
}

// Same bits, or both NaN (a NaN's payload is not part of what a file says).
bool same_number(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_same(const Profile& full, const RankFile& compact, const std::string& where) {
  ASSERT_EQ(full.nodes.size(), compact.nodes.size()) << where;
  for (size_t i = 0; i < full.nodes.size(); ++i) {
    const Node& n = full.nodes[i];
    const RankFile::FlatNode& c = compact.nodes[i];
    EXPECT_EQ(n.name, compact.str(c.name)) << where << " node " << i;
    EXPECT_EQ(n.type, compact.str(c.type)) << where << " node " << i;
    EXPECT_EQ(n.parent, c.parent) << where << " node " << i;
  }
  ASSERT_EQ(full.metrics.size(), compact.metrics.size()) << where;
  for (size_t m = 0; m < full.metrics.size(); ++m) {
    const MetricInfo& a = full.metrics[m];
    const MetricInfo& b = compact.metrics[m];
    EXPECT_EQ(a.name, b.name) << where;
    EXPECT_EQ(a.kind, b.kind) << where << " metric " << a.name;
    EXPECT_EQ(a.integral, b.integral) << where << " metric " << a.name;
    EXPECT_EQ(a.from_array, b.from_array) << where << " metric " << a.name;
    std::vector<double> x = full.stored(static_cast<int32_t>(m));
    std::vector<double> y = compact.stored(static_cast<int32_t>(m));
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_TRUE(is_absent(x[i]) == is_absent(y[i]) && same_number(x[i], y[i]))
          << where << " metric " << a.name << " node " << i << ": " << x[i] << " vs " << y[i];
    }
  }
  std::vector<std::string> texts_full, texts_compact;
  for (size_t i = 0; i < full.nodes.size(); ++i) {
    for (const auto& [k, v] : full.nodes[i].text) {
      texts_full.push_back(std::to_string(i) + " " + k + "=" + v);
    }
  }
  for (const RankFile::Text& t : compact.texts) {
    texts_compact.push_back(std::to_string(t.node) + " " + std::string(compact.str(t.key)) + "=" +
                            std::string(compact.str(t.value)));
  }
  std::sort(texts_full.begin(), texts_full.end());
  std::sort(texts_compact.begin(), texts_compact.end());
  EXPECT_EQ(texts_full, texts_compact) << where;
  ASSERT_EQ(full.devices.size(), compact.devices.size()) << where;
  for (size_t d = 0; d < full.devices.size(); ++d) {
    const DeviceInfo& a = full.devices[d];
    const DeviceInfo& b = compact.devices[d];
    EXPECT_EQ(a.type + "/" + a.id + "/" + a.arch, b.type + "/" + b.id + "/" + b.arch) << where;
    EXPECT_TRUE(same_number(a.num_sms, b.num_sms) &&
                same_number(a.clock_rate_khz, b.clock_rate_khz) &&
                same_number(a.memory_clock_rate_khz, b.memory_clock_rate_khz) &&
                same_number(a.bus_width_bits, b.bus_width_bits))
        << where << " device " << a.id;
  }
  EXPECT_EQ(full.run.rank, compact.run.rank) << where;
  EXPECT_EQ(full.run.world_size, compact.run.world_size) << where;
  EXPECT_EQ(full.run.local_rank, compact.run.local_rank) << where;
  EXPECT_EQ(
      full.run.host + "|" + full.run.device + "|" + full.run.launcher + "|" + full.run.version,
      compact.run.host + "|" + compact.run.device + "|" + compact.run.launcher + "|" +
          compact.run.version)
      << where;
}

void expect_agreement(std::string_view text, const std::string& where) {
  Profile full;
  RankFile compact;
  std::string a = outcome([&] { full = parse_hatchet(text); });
  std::string b = outcome([&] { parse_rank_file(text, compact); });
  EXPECT_EQ(a, b) << where;
  if (a == "ok" && b == "ok") expect_same(full, compact, where);
}

TEST(ReaderAgreement, EveryFuzzSeedReadsTheSameBothWays) {
  fs::path seeds = fs::path(PROTON_VIEWER_FIXTURES).parent_path() / "fuzz";
  size_t inputs = 0, accepted = 0;
  for (const char* fuzzer : {"proton_viewer_reader_fuzzer", "proton_viewer_rank_fuzzer",
                             "proton_viewer_msgpack_fuzzer"}) {
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(seeds / fuzzer))
      paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    for (const fs::path& path : paths) {
      std::string text = slurp(path);
      // The seed, and three cuts of it: a document broken in the middle of a node, a string, a
      // number or a msgpack header must be refused at the same byte for the same reason.
      for (size_t quarter = 4; quarter >= 1; --quarter) {
        std::string_view cut = std::string_view(text).substr(0, text.size() * quarter / 4);
        expect_agreement(cut, path.string() + " cut at " + std::to_string(cut.size()));
        ++inputs;
        accepted += outcome([&] { (void)parse_hatchet(cut); }) == "ok";
      }
    }
  }
  // Both readable profiles and broken ones: agreeing on one kind alone would prove little.
  EXPECT_GT(inputs, 1200u);
  EXPECT_GT(accepted, 300u);
  EXPECT_GT(inputs - accepted, 900u);
}

TEST(ReaderAgreement, MetricRulesReadTheSameBothWays) {
  // Declared kinds apply whichever comes first, the rule or the metric; a rule that is not an
  // object is refused by both readers.
  for (std::string_view text : {
           R"J([{"frame":{"name":"ROOT"},"metric_rules":{"peak":"exc","ver":"pty","x":1},
                 "metrics":{"peak":3,"ver":2,"x":1},
                 "children":[{"frame":{"name":"k"},"metrics":{"peak":5,"ver":2}}]},{}])J",
           R"J([{"frame":{"name":"ROOT"},"metrics":{"peak":3,"ver":2},
                 "metric_rules":{"peak":"exc","ver":"pty"}},{}])J",
           R"J([{"frame":{"name":"ROOT"},"metric_rules":[1]},{}])J",
           R"J([{"frame":{"name":"ROOT"},"metric_rules":{"a":"exc"},
                 "children":[{"frame":{"name":"k"},"metric_rules":[1]}]},{}])J",
       }) {
    expect_agreement(text, std::string(text));
  }
  RankFile file = parse_rank_file(
      R"J([{"frame":{"name":"ROOT"},"metric_rules":{"peak":"exc"},"metrics":{"peak":3},
            "children":[{"frame":{"name":"k"},"metrics":{"peak":5}}]},{}])J");
  ASSERT_EQ(file.metrics.size(), 1u);
  EXPECT_EQ(file.metrics[0].kind, MetricKind::kExclusive);
  EXPECT_EQ(file.inclusive(0)[0], 3);  // not rolled up: 3, not 8
}

TEST(ReaderAgreement, DeclaredKindOfAMetricTheRootDoesNotHold) {
  // As Proton writes an exclusive metric: a rule on the root and values only on the nodes that
  // recorded it. Both readers and the rank merge still keep it exclusive.
  std::string_view text =
      R"J([{"frame":{"name":"ROOT"},"metrics":{"n":0},"metric_rules":{"peak":"exc"},
            "children":[{"frame":{"name":"a"},"metrics":{"peak":5,"n":1},
              "children":[{"frame":{"name":"k"},"metrics":{"peak":3,"n":2}}]}]},{}])J";
  expect_agreement(text, std::string(text));
  Profile p = parse_hatchet(text);
  int32_t peak = p.find_metric("peak");
  ASSERT_GE(peak, 0);
  EXPECT_EQ(p.metrics[peak].kind, MetricKind::kExclusive);
  EXPECT_EQ(p.inclusive(peak)[testing::find_node(p, "a")], 5);  // not 8
  RankFile file = parse_rank_file(text);
  for (const auto& m : file.metrics)
    EXPECT_EQ(m.kind, m.name == "peak" ? MetricKind::kExclusive : MetricKind::kInclusive);
  // Merged (from files, from profiles, or by proton-viewer's merge of profiles), written and read
  // back: still exclusive, and its statistics are named after it.
  RankMerger files, profiles;
  std::string why;
  for (const char* label : {"r0", "r1"}) {
    ASSERT_TRUE(files.add_file(parse_rank_file(text), label, why)) << why;
    ASSERT_TRUE(profiles.add(parse_hatchet(text), label, why)) << why;
  }
  Profile a = parse_hatchet(text), b = parse_hatchet(text);
  for (const Profile& result : {files.result(), profiles.result(), merge_profiles({&a, &b})}) {
    Profile merged = parse_hatchet(to_hatchet_json(result));
    int32_t merged_peak = merged.find_metric("peak");
    ASSERT_GE(merged_peak, 0);
    EXPECT_EQ(merged.metrics[merged_peak].kind, MetricKind::kExclusive);
    EXPECT_EQ(merged.inclusive(merged_peak)[testing::find_node(merged, "a")], 10);  // not 16
    EXPECT_GE(merged.find_metric("peak:max (exc)"), 0);
  }
}

TEST(ReaderAgreement, RankMergeOfFilesKeepsDeclaredKinds) {
  // A Proton file writes "peak (exc)" as "peak" with a root rule: the streaming merge of rank
  // files folds it as the merge of profiles does (an exclusive metric: no imbalance column, never
  // rolled up into parents).
  std::string_view text =
      R"J([{"frame":{"name":"ROOT"},"metrics":{"peak":0},"metric_rules":{"peak":"exc"},
            "children":[{"frame":{"name":"k"},"metrics":{"peak":6,"time (ns)":10}}]},{}])J";
  RankMerger profiles, files;
  std::string why;
  for (const char* label : {"r0", "r1"}) {
    ASSERT_TRUE(profiles.add(parse_hatchet(text), label, why)) << why;
    ASSERT_TRUE(files.add_file(parse_rank_file(text), label, why)) << why;
  }
  std::string merged = to_hatchet_json(files.result());
  EXPECT_EQ(to_hatchet_json(profiles.result()), merged);
  EXPECT_NE(merged.find("\"time:imbalance (exc)\""), std::string::npos) << merged;
  EXPECT_EQ(merged.find("peak:imbalance"), std::string::npos) << merged;
}

}  // namespace
}  // namespace proton::viewer
