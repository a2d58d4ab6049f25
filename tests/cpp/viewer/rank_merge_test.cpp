// The multi-rank views: streaming merge, stragglers, trace merge, and the CLI around them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"
#include "viewer/errors.h"
#include "viewer/merge.h"
#include "viewer/profile_writer.h"
#include "viewer/rank_file.h"
#include "viewer/rank_merge.h"
#include "viewer/stragglers.h"
#include "viewer/trace_merge.h"

namespace proton::viewer {
namespace {

using testing::find_node;
using testing::fixture;
using testing::run;
using Json = nlohmann::json;

// A rank's profile: ROOT > step > {gemm (gemm_ns), all_reduce > nccl (1000)} [> extra].
Json rank_json(int rank, int64_t gemm_ns, bool extra = false, int world = 3,
               const char* version = "0.1.0", const char* top = "step") {
  auto kernel = [](const char* name, int64_t ns) {
    return Json{
        {"frame", {{"name", name}, {"type", "function"}}},
        {"metrics", {{"time (ns)", ns}, {"count", 1}, {"device_id", "0"}, {"device_type", "CUDA"}}},
        {"children", Json::array()}};
  };
  Json ar = {{"frame", {{"name", "all_reduce"}, {"type", "function"}}},
             {"metrics", Json::object()},
             {"children", Json::array({kernel("ncclKernel_AllReduce", 1000)})}};
  Json step = {{"frame", {{"name", top}, {"type", "function"}}},
               {"metrics", Json::object()},
               {"children", Json::array({kernel("gemm", gemm_ns), ar})}};
  Json kids = Json::array({step});
  if (extra) kids.push_back(kernel("rank0_only", 500));
  Json frame = {{"name", "ROOT"},           {"type", "function"}, {"rank", rank},
                {"world_size", world},      {"host", "node1"},    {"device", std::to_string(rank)},
                {"proton_version", version}};
  if (rank < 0) frame = {{"name", "ROOT"}, {"type", "function"}};
  return Json::array(
      {Json{{"frame", frame}, {"metrics", {{"time (ns)", 0}, {"count", 0}}}, {"children", kids}},
       Json::object()});
}

Profile rank_profile(int rank, int64_t gemm_ns, bool extra = false, int world = 3,
                     const char* version = "0.1.0", const char* top = "step") {
  return parse_hatchet(rank_json(rank, gemm_ns, extra, world, version, top).dump());
}

double value(const Profile& p, const char* metric, const char* node) {
  int32_t m = p.find_metric(metric);
  EXPECT_GE(m, 0) << metric;
  if (m < 0) return NAN;
  auto kind = p.metrics[static_cast<size_t>(m)].kind;
  auto col = kind == MetricKind::kInclusive ? p.inclusive(m) : p.stored(m);
  return col[static_cast<size_t>(find_node(p, node))];
}

TEST(RankMerge, ReaderKeepsTheRankBlock) {
  Profile p = rank_profile(2, 10);
  EXPECT_EQ(p.run.rank, 2);
  EXPECT_EQ(p.run.world_size, 3);
  EXPECT_EQ(p.run.host, "node1");
  EXPECT_EQ(p.run.device, "2");
  EXPECT_EQ(p.run.version, "0.1.0");
  EXPECT_EQ(p.nodes[0].name, "ROOT");
  Profile plain = load_hatchet(fixture("triton_style.json"));
  EXPECT_EQ(plain.run.rank, -1);
}

TEST(RankMerge, StatisticsImbalanceAndRecordedRanks) {
  // Given out of order: the argmax is the recorded rank, not the position.
  Profile r2 = rank_profile(2, 3000), r0 = rank_profile(0, 1000, true), r1 = rank_profile(1, 2000);
  RankMerger m;
  std::string why;
  for (const Profile* p : {&r2, &r0, &r1})
    ASSERT_TRUE(m.add(*p, "f", why)) << why;
  Profile out = parse_hatchet(to_hatchet_json(m.result()));  // round trip through the writer
  EXPECT_EQ(value(out, "time (ns)", "gemm"), 6000);
  EXPECT_EQ(value(out, "time:mean (ns) (exc)", "gemm"), 2000);
  EXPECT_EQ(value(out, "time:min (ns) (exc)", "gemm"), 1000);
  EXPECT_EQ(value(out, "time:max (ns) (exc)", "gemm"), 3000);
  EXPECT_EQ(value(out, "time:argmax (pty)", "gemm"), 2);
  EXPECT_DOUBLE_EQ(value(out, "time:imbalance (exc)", "gemm"), 1.5);
  EXPECT_EQ(value(out, "time:imbalance (exc)", "ncclKernel_AllReduce"), 1);
  // A frame only rank 0 ran: the merge's min counts the others as 0 (as merge.h), the
  // imbalance only the ranks that ran it, and "ranks" says how many did.
  EXPECT_EQ(value(out, "time:min (ns) (exc)", "rank0_only"), 0);
  EXPECT_EQ(value(out, "time:imbalance (exc)", "rank0_only"), 1);
  EXPECT_EQ(value(out, "ranks (exc)", "rank0_only"), 1);
  EXPECT_EQ(value(out, "ranks (exc)", "gemm"), 3);
}

TEST(RankMerge, ExtremaPropertiesFoldToTheirExtreme) {
  // Each rank's shortest and longest gemm launch: the merge keeps the shortest and the longest
  // over the ranks (a kernel_time_variance over the summed time and count needs them), and a
  // plain property the first rank's value. Both merges agree.
  std::vector<Profile> ranks;
  int64_t lows[] = {300, 100, 200}, highs[] = {900, 700, 1200}, regs[] = {64, 96, 128};
  for (int r = 0; r < 3; ++r) {
    Json j = rank_json(r, 1000 * (r + 1));
    j[0]["metric_rules"] = {
        {"time_min (ns)", "pty"}, {"time_max (ns)", "pty"}, {"registers_per_thread", "pty"}};
    Json& gemm = j[0]["children"][0]["children"][0];
    gemm["metrics"]["time_min (ns)"] = lows[r];
    gemm["metrics"]["time_max (ns)"] = highs[r];
    gemm["metrics"]["registers_per_thread"] = regs[r];
    ranks.push_back(parse_hatchet(j.dump()));
  }
  RankMerger m;
  std::string why;
  for (const Profile& p : ranks)
    ASSERT_TRUE(m.add(p, "f", why)) << why;
  Profile streamed = parse_hatchet(to_hatchet_json(m.result()));
  Profile merged = merge_profiles({&ranks[0], &ranks[1], &ranks[2]});
  for (const Profile* out : {&streamed, &merged}) {
    EXPECT_EQ(value(*out, "time_min (ns)", "gemm"), 100);
    EXPECT_EQ(value(*out, "time_max (ns)", "gemm"), 1200);
    EXPECT_EQ(value(*out, "registers_per_thread", "gemm"), 64);
  }
  EXPECT_EQ(property_fold("time_min (ns)"), PropertyFold::kMin);
  EXPECT_EQ(property_fold("util_max (pty)"), PropertyFold::kMax);
  EXPECT_EQ(property_fold("max_bytes"), PropertyFold::kFirst);
}

TEST(RankMerge, StreamedFileEqualsTheMergedProfile) {
  Profile a = load_hatchet(fixture("triton_style.json"));
  Profile b = load_hatchet(fixture("triton_style_new.json"));
  RankMerger m;
  std::string why;
  ASSERT_TRUE(m.add(a, "a", why));
  ASSERT_TRUE(m.add(b, "b", why));
  std::string path = std::filesystem::temp_directory_path() / "proton_rank_stream_test.hatchet";
  m.write_json(path);
  Profile streamed = load_hatchet(path);
  std::filesystem::remove(path);
  // The streamed file and the in-memory result written by profile_writer parse to one profile.
  Profile built = parse_hatchet(to_hatchet_json(m.result()));
  ASSERT_EQ(streamed.nodes.size(), built.nodes.size());
  ASSERT_EQ(streamed.metrics.size(), built.metrics.size());
  for (size_t k = 0; k < built.metrics.size(); ++k) {
    int32_t s = streamed.find_metric(built.metrics[k].name);
    ASSERT_GE(s, 0) << built.metrics[k].name;
    EXPECT_EQ(streamed.metrics[static_cast<size_t>(s)].integral, built.metrics[k].integral)
        << built.metrics[k].name;
    auto x = streamed.stored(s), y = built.stored(static_cast<int32_t>(k));
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_TRUE((std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i])
          << built.metrics[k].name << " node " << i;
    }
  }
  for (size_t i = 0; i < built.nodes.size(); ++i) {
    EXPECT_EQ(streamed.nodes[i].name, built.nodes[i].name);
    EXPECT_EQ(streamed.nodes[i].text, built.nodes[i].text);
  }
  EXPECT_EQ(streamed.devices.size(), built.devices.size());
}

TEST(RankMerge, MatchesMergeProfilesOnSharedColumns) {
  Profile a = load_hatchet(fixture("triton_style.json"));
  Profile b = load_hatchet(fixture("triton_style_new.json"));
  Profile old = merge_profiles({&a, &b});
  RankMerger m;
  std::string why;
  ASSERT_TRUE(m.add(a, "a", why));
  ASSERT_TRUE(m.add(b, "b", why));
  Profile now = m.result();
  for (const char* metric : {"time (ns)", "time:mean (ns) (exc)", "time:min (ns) (exc)",
                             "time:max (ns) (exc)", "time:argmax (pty)", "count"}) {
    for (const char* node : {"ROOT", "matmul_kernel", "_attn_fwd", "softmax_kernel"}) {
      if (find_node(old, node) < 0) continue;
      EXPECT_EQ(value(old, metric, node), value(now, metric, node)) << metric << " " << node;
    }
  }
}

TEST(RankMerge, BadInputsAreLeftOutByName) {
  RankMerger m;
  std::string why;
  ASSERT_TRUE(m.add(rank_profile(0, 1), "a.rank0.hatchet", why));
  EXPECT_FALSE(m.add(rank_profile(0, 2), "b.rank0.hatchet", why));
  EXPECT_NE(why.find("b.rank0.hatchet: claims rank 0, as a.rank0.hatchet"), std::string::npos)
      << why;
  EXPECT_FALSE(m.add(rank_profile(1, 2, false, 3, "9.9.9"), "v.hatchet", why));
  EXPECT_NE(why.find("Proton 9.9.9"), std::string::npos) << why;
  EXPECT_NE(why.find("a.rank0.hatchet by Proton 0.1.0"), std::string::npos) << why;
  EXPECT_FALSE(m.add(rank_profile(1, 2, false, 3, "0.1.0", "other_program"), "o.hatchet", why));
  EXPECT_NE(why.find("no call path in common with a.rank0.hatchet"), std::string::npos) << why;
  EXPECT_EQ(m.size(), 1u);
  auto warnings = m.set_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ranks 1-2 of 3 missing"), std::string::npos) << warnings[0];
}

// The compact reader the streaming merge uses parses what the Profile reader parses, and the
// merge of either is the same.
TEST(RankFileReader, AgreesWithTheProfileReader) {
  for (const char* name : {"triton_style.json", "triton_style_new.json", "proton_style.json"}) {
    std::string text = read_file(fixture(name));
    Profile p = parse_hatchet(text);
    RankFile f = parse_rank_file(text);
    ASSERT_EQ(f.nodes.size(), p.nodes.size()) << name;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      EXPECT_EQ(f.str(f.nodes[i].name), p.nodes[i].name) << name;
      EXPECT_EQ(f.nodes[i].parent, p.nodes[i].parent) << name;
    }
    ASSERT_EQ(f.metrics.size(), p.metrics.size()) << name;
    for (size_t m = 0; m < p.metrics.size(); ++m) {
      int32_t pm = p.find_metric(f.metrics[m].name);
      ASSERT_GE(pm, 0);
      auto a = f.inclusive(static_cast<int32_t>(m)), b = p.inclusive(pm);
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE((std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i]) << name << " " << i;
    }
    EXPECT_EQ(f.devices.size(), p.devices.size());
  }
  std::string ranked = rank_json(4, 10).dump();
  EXPECT_EQ(parse_rank_file(ranked).run.rank, 4);
  EXPECT_EQ(parse_rank_file(ranked).run.host, "node1");
  // Same rejections as the Profile reader, with an offset.
  for (const char* bad :
       {"[]", "{}", "[{\"frame\":{}}]", "[{\"frame\":{\"name\":\"a\"},\"metrics\":{\"x\":{}}}]",
        "[{\"frame\":{\"name\":\"a\"}},{}, 3]", "[{\"frame\":{\"name\":\"a\""}) {
    EXPECT_THROW(parse_rank_file(bad), InputError) << bad;
    EXPECT_THROW(parse_hatchet(bad), InputError) << bad;
  }
}

TEST(RankMerge, FileAndProfilePathsAgree) {
  std::vector<std::string> texts = {read_file(fixture("triton_style.json")),
                                    read_file(fixture("triton_style_new.json"))};
  RankMerger a, b;
  std::string why;
  for (const auto& t : texts) {
    Profile p = parse_hatchet(t);
    ASSERT_TRUE(a.add(p, "x", why));
    RankFile f = parse_rank_file(t);
    ASSERT_TRUE(b.add_file(f, "x", why));
  }
  EXPECT_EQ(to_hatchet_json(a.result()), to_hatchet_json(b.result()));
}

TEST(RankMerge, RankRanges) {
  EXPECT_EQ(rank_ranges({5, 0, 1, 2, 7, 8}), "0-2, 5, 7-8");
  EXPECT_EQ(rank_ranges({}), "");
}

TEST(Stragglers, ListsTheWorstFramesAndMissingRanks) {
  RankMerger m;
  m.track_presence();
  std::string why;
  Profile r0 = rank_profile(0, 1000, true), r1 = rank_profile(1, 1000), r2 = rank_profile(2, 4000);
  for (const Profile* p : {&r0, &r1, &r2})
    ASSERT_TRUE(m.add(*p, "f", why));
  Profile merged = m.result();
  std::ostringstream out;
  StragglerOptions o;
  o.metric = "time";
  render_stragglers(out, m, merged, o);
  std::string text = out.str();
  // gemm: max 4000 / mean 2000 = 2.00 on rank 2, listed first.
  auto gemm = text.find("2.00");
  ASSERT_NE(gemm, std::string::npos) << text;
  EXPECT_LT(gemm, text.find("1.00")) << text;
  EXPECT_NE(text.find("step > gemm"), std::string::npos) << text;
  // rank0_only: ranks 1 and 2 are shown as missing, not as zeros.
  auto line = text.substr(text.find("rank0_only") - 40, 40);
  EXPECT_NE(line.find("1-2"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2 in"), std::string::npos) << text;
  o.metric = "no_such_metric";
  EXPECT_THROW(render_stragglers(out, m, merged, o), UsageError);
}

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("proton_rank_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

TEST(RankCli, SeveralProfilesShowTheMergedTree) {
  TempDir dir;
  std::string a = dir.write("x.rank0.hatchet", rank_json(0, 1000, true, 2).dump());
  std::string b = dir.write("x.rank1.hatchet", rank_json(1, 3000, false, 2).dump());
  std::string bad = dir.write("x.rank2.hatchet", rank_json(2, 1).dump().substr(0, 50));
  auto r = run({"--no-color", a, b, bad});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("imbalance"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks"), std::string::npos) << r.out;  // rank0_only varies
  EXPECT_NE(r.out.find("1.500"), std::string::npos) << r.out;  // gemm: 3000 / 2000
  EXPECT_NE(r.err.find("x.rank2.hatchet:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("left out"), std::string::npos) << r.err;

  auto s = run({"--stragglers=2", a, b});
  EXPECT_EQ(s.status, 0) << s.err;
  EXPECT_NE(s.out.find("Stragglers by time (ns) over 2 ranks"), std::string::npos) << s.out;

  std::string out = dir.path("merged.hatchet");
  auto mr = run({"merge", a, b, bad, "-o", out});
  EXPECT_EQ(mr.status, 1) << mr.err;  // written without the bad input, which a script must see
  EXPECT_NE(mr.out.find("(rank 1)"), std::string::npos) << mr.out;
  EXPECT_NE(mr.err.find("x.rank2.hatchet"), std::string::npos) << mr.err;
  Profile merged = load_hatchet(out);
  EXPECT_EQ(value(merged, "time (ns)", "gemm"), 4000);
  EXPECT_DOUBLE_EQ(value(merged, "time:imbalance (exc)", "gemm"), 1.5);
  EXPECT_EQ(value(merged, "ranks (exc)", "rank0_only"), 1);
  EXPECT_EQ(merged.nodes[static_cast<size_t>(find_node(merged, "gemm"))].text_of("device_id"), "0");
  EXPECT_EQ(merged.devices.size(), 0u);

  auto none = run({a + ".missing", bad});
  EXPECT_EQ(none.status, 1);
  EXPECT_NE(none.err.find("none of the 2 profiles"), std::string::npos) << none.err;
  EXPECT_EQ(run({a, b, "--diff-profile", a}).status, 2);
}

std::string trace_json(int rank, long long base_ns, bool with_rank = true) {
  Json events = Json::array();
  events.push_back({{"ph", "X"},
                    {"name", "gemm"},
                    {"pid", 0},
                    {"tid", 7},
                    {"ts", 10.5},
                    {"dur", 2.0},
                    {"args", {{"time (ns)", 2000}}}});
  events.push_back(
      {{"ph", "X"}, {"name", "step"}, {"pid", 4242}, {"tid", 1}, {"ts", 9.0}, {"dur", 5.0}});
  events.push_back({{"ph", "s"},
                    {"cat", "flow"},
                    {"name", "launch->kernel"},
                    {"id", 1},
                    {"pid", 4242},
                    {"tid", 1},
                    {"ts", 9.5}});
  events.push_back({{"ph", "M"},
                    {"pid", 0},
                    {"tid", 0},
                    {"name", "process_name"},
                    {"args", {{"name", "GPU 0"}}}});
  events.push_back({{"ph", "M"},
                    {"pid", 0},
                    {"tid", 7},
                    {"name", "thread_name"},
                    {"args", {{"name", "stream 7"}}}});
  Json other = {{"proton_gpu_offset_ns", 123 + rank}};
  if (with_rank) {
    other["proton_rank"] = rank;
    other["proton_host"] = "node" + std::to_string(rank);
    other["proton_device"] = "0";
  }
  return Json{{"traceEvents", events},
              {"displayTimeUnit", "ns"},
              {"baseTimeNanoseconds", base_ns},
              {"otherData", other}}
      .dump();
}

TEST(TraceMerge, OneProcessPerRankOnTheWallClock) {
  TempDir dir;
  std::string a = dir.write("t.rank0.chrome_trace", trace_json(0, 1'000'000'000'000));
  std::string b = dir.write("t.rank1.chrome_trace", trace_json(1, 1'000'000'005'000));
  std::string dup = dir.write("dup.chrome_trace", trace_json(1, 5));
  std::string cut = dir.write("cut.chrome_trace", trace_json(2, 5).substr(0, 80));
  std::string out = dir.path("all.json");
  auto r = run({"merge", "--output-format", "trace", b, a, dup, cut, "-o", out});
  ASSERT_EQ(r.status, 1) << r.err;  // merged, less the two inputs left out
  EXPECT_NE(r.err.find("dup.chrome_trace: claims rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cut.chrome_trace:"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("shifted +5000 ns"), std::string::npos) << r.out;
  std::ifstream in(out);
  Json j = Json::parse(in);
  EXPECT_EQ(j["baseTimeNanoseconds"], 1'000'000'000'000);
  EXPECT_EQ(j["otherData"]["proton_rank_shift_ns"]["1"], 5000);
  EXPECT_EQ(j["otherData"]["proton_gpu_offset_ns"]["0"], 123);
  std::map<int, std::string> process;
  std::set<std::pair<int, int>> lanes;
  double gemm1 = -1, flow1 = -1;
  for (const auto& e : j["traceEvents"]) {
    int pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "process_name") process[pid] = e["args"]["name"];
    if (e["ph"] == "X") lanes.insert({pid, e["tid"].get<int>()});
    if (pid == 2 && e["name"] == "gemm") gemm1 = e["ts"];
    if (pid == 2 && e["ph"] == "s") flow1 = e["id"];
  }
  ASSERT_EQ(process.size(), 2u);  // one process per rank, pid = rank + 1
  EXPECT_EQ(process[1], "rank 0 · node0 · GPU 0");
  EXPECT_EQ(process[2], "rank 1 · node1 · GPU 0");
  EXPECT_EQ(lanes.size(), 4u);          // GPU stream and CPU thread of each rank
  EXPECT_DOUBLE_EQ(gemm1, 10.5 + 5.0);  // shifted by 5 µs
  EXPECT_EQ(flow1, 4294967296.0 + 1);   // flow ids kept apart per rank
  bool named = false;
  for (const auto& e : j["traceEvents"]) {
    named |=
        e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "GPU 0 / stream 7";
  }
  EXPECT_TRUE(named);

  auto none = run({"merge", "--output-format", "trace", cut, "-o", out});
  EXPECT_EQ(none.status, 1);
  EXPECT_THROW(read_trace_header("[1,2]"), InputError);
  EXPECT_THROW(read_trace_header("{\"a\":1}"), InputError);
}

}  // namespace
}  // namespace proton::viewer
