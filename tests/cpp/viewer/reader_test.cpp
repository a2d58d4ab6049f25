// The Hatchet reader: both writers' styles, and every rejection naming a byte and a reason.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "test_util.h"
#include "viewer/hatchet_reader.h"
#include "viewer/profile_writer.h"
#include "viewer/rank_file.h"
#include "viewer/text_render.h"

namespace proton::viewer {
namespace {

using testing::find_node;
using testing::fixture;

TEST(Reader, TritonStyleSortedKeys) {
  Profile p = load_hatchet(fixture("triton_style.json"));
  ASSERT_EQ(p.nodes[0].name, "ROOT");
  int32_t kernel = find_node(p, "matmul_kernel");
  ASSERT_GE(kernel, 0);
  EXPECT_TRUE(p.nodes[kernel].is_kernel());
  EXPECT_EQ(p.nodes[kernel].text_of("device_type"), "CUDA");
  EXPECT_EQ(p.stored(p.find_metric("time (ns)"))[kernel], 4000000);
  ASSERT_EQ(p.devices.size(), 1u);
  EXPECT_EQ(p.devices[0].arch, "90");
  EXPECT_EQ(p.devices[0].num_sms, 132);
  EXPECT_EQ(p.devices[0].memory_clock_rate_khz, 2619000);
  EXPECT_TRUE(p.metrics[p.find_metric("count")].integral);
  EXPECT_FALSE(p.metrics[p.find_metric("flops16")].integral);
}

TEST(Reader, ProtonStyleAnyKeyOrderAndMissingParts) {
  Profile p = load_hatchet(fixture("proton_style.json"));
  int32_t copy = find_node(p, "copy_kernel");  // "metrics" written before "frame"
  ASSERT_GE(copy, 0);
  EXPECT_EQ(p.nodes[copy].type, "function");
  EXPECT_EQ(p.nodes[find_node(p, "step")].type, "");  // no "type"
  EXPECT_TRUE(p.nodes[find_node(p, "idle_scope")].values.empty());
  EXPECT_EQ(metric_kind_of("occupancy (exc)"), MetricKind::kExclusive);
  EXPECT_EQ(p.metrics[p.find_metric("regs (pty)")].kind, MetricKind::kProperty);
  int32_t array = p.find_metric("per_xcd");
  EXPECT_TRUE(p.metrics[array].from_array);
  EXPECT_EQ(p.stored(array)[find_node(p, "gemm_fp8")], 600);
  EXPECT_EQ(p.devices[0].type, "HIP");
  EXPECT_EQ(p.devices[0].arch, "gfx942");
}

// Proton writes "(exc)"/"(pty)" metrics under Triton's names (suffix removed) and their rules
// in the root's "metric_rules": declared before or after the metric is first seen.
TEST(Reader, MetricRulesDeclareKindsOfSuffixlessNames) {
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"metrics":{"peak":0},
    "metric_rules":{"peak":"exc","cfg":"pty","odd":"weird","num":1},
    "children":[{"frame":{"name":"a"},"metrics":{"peak":5,"n":5},"children":[
      {"frame":{"name":"b"},"metrics":{"peak":3,"n":3,"cfg":"bf16"}}]}]},{}])J");
  int32_t peak = p.find_metric("peak");
  EXPECT_EQ(p.metrics[peak].kind, MetricKind::kExclusive);
  EXPECT_EQ(p.metrics[p.find_metric("n")].kind, MetricKind::kInclusive);
  auto inc = p.inclusive(peak);
  EXPECT_EQ(inc[find_node(p, "a")], 5);  // not rolled up
  EXPECT_EQ(p.inclusive(p.find_metric("n"))[find_node(p, "a")], 8);
  EXPECT_EQ(p.nodes[find_node(p, "b")].text_of("cfg"), "bf16");
  Profile q = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"children":[
    {"frame":{"name":"a"},"metrics":{"peak":5}}],"metric_rules":{"peak":"pty"}},{}])J");
  EXPECT_EQ(q.metrics[q.find_metric("peak")].kind, MetricKind::kProperty);
  EXPECT_THROW(parse_hatchet(R"J([{"frame":{"name":"ROOT"},"metric_rules":[1]},{}])J"), InputError);
  // The viewer's writer declares them again: written and read back, the kinds are the same.
  for (const Profile* read : {&p, &q}) {
    Profile back = parse_hatchet(to_hatchet_json(*read));
    for (const MetricInfo& m : read->metrics)
      EXPECT_EQ(back.metrics[back.find_metric(m.name)].kind, m.kind) << m.name;
  }
}

TEST(Reader, InclusiveRollUpKeepsExclusiveAndProperties) {
  Profile p = load_hatchet(fixture("proton_style.json"));
  auto time = p.inclusive(p.find_metric("time (ns)"));
  EXPECT_EQ(time[0], 3500);
  EXPECT_EQ(time[find_node(p, "step")], 3000);
  EXPECT_TRUE(std::isnan(time[find_node(p, "idle_scope")]));
  auto occupancy = p.inclusive(p.find_metric("occupancy (exc)"));
  EXPECT_TRUE(std::isnan(occupancy[find_node(p, "step")]));
  auto regs = p.inclusive(p.find_metric("regs (pty)"));
  EXPECT_EQ(regs[find_node(p, "gemm_fp8")], 128);
  EXPECT_TRUE(std::isnan(regs[0]));
}

TEST(Reader, MinimalForms) {
  Profile p = parse_hatchet(R"([{"frame":{"name":"ROOT"}}])");
  EXPECT_EQ(p.nodes.size(), 1u);
  p = parse_hatchet(R"( [ {"frame":{"name":"ROOT"},"metrics":{},"children":[]} , {} ] )");
  EXPECT_TRUE(p.devices.empty());
  p = parse_hatchet(R"([{"frame":{"name":"a\u00e9\ud83d\ude00\n"},"extra":[1,{"x":null}]},{}])");
  EXPECT_EQ(p.nodes[0].name, "a\xc3\xa9\xf0\x9f\x98\x80\n");
}

struct BadInput {
  const char* text;
  size_t offset;
  const char* reason;  // a substring of the message
};

class ReaderRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(ReaderRejects, WithOffsetAndReason) {
  const BadInput& bad = GetParam();
  try {
    parse_hatchet(bad.text);
    FAIL() << "accepted: " << bad.text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), bad.offset) << e.what();
    EXPECT_NE(std::string(e.what()).find(bad.reason), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ReaderRejects,
    ::testing::Values(
        BadInput{"", 0, "must be a JSON array"},
        BadInput{"{}", 0, "must be a JSON array [root, device_map], found object"},
        BadInput{"[]", 1, "no root node"},
        BadInput{"[1]", 1, "expected a node object, found number"},
        BadInput{R"([{"metrics":{}}])", 1, "node has no \"frame\""},
        BadInput{R"([{"frame":{}}])", 10, "frame has no \"name\""},
        BadInput{R"([{"frame":{"name":3}}])", 18, "frame \"name\" must be a string"},
        BadInput{R"([{"frame":{"name":"a"},"metrics":{"t":true}}])", 38, "must be a number"},
        BadInput{R"([{"frame":{"name":"a"},"metrics":{"t":[1,"x"]}}])", 41, "must hold numbers"},
        BadInput{R"([{"frame":{"name":"a"},"metrics":[]}])", 33, "\"metrics\" must be an object"},
        BadInput{R"([{"frame":{"name":"a"},"children":{}}])", 34, "\"children\" must be an array"},
        BadInput{R"([{"frame":{"name":"a"}},{},{}])", 26, "more than two elements"},
        BadInput{R"([{"frame":{"name":"a"}},[]])", 24, "device map must be an object"},
        BadInput{R"([{"frame":{"name":"a"}}] x)", 25, "after the end of the profile"},
        BadInput{R"([{"frame":{"name":"a)", 20, "unterminated string"},
        BadInput{"[{\"frame\":{\"name\":\"a\x01\"}}]", 20, "control character"},
        // Metric values may be +-1e999 (an infinity); device fields may not.
        BadInput{R"([{"frame":{"name":"a"},"metrics":{}},{"CUDA":{"0":{"num_sms":1e999}}}])", 61,
                 "out of range"},
        BadInput{R"([{"frame":{"name":"a"},"metrics":{"t":01}}])", 39, "expected ',' or '}'"},
        BadInput{R"([{"frame":{"name":"\x"}}])", 20, "bad escape"}));

TEST(Reader, BoundsTreeDepth) {
  std::string deep;
  for (int i = 0; i <= kMaxTreeDepth + 1; ++i)
    deep += R"({"frame":{"name":"n"},"children":[)";
  try {
    parse_hatchet("[" + deep);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deeper than"), std::string::npos);
  }
}

TEST(Reader, BoundsSkippedNesting) {
  std::string deep = R"([{"frame":{"name":"n"},"x":)" + std::string(100000, '[');
  EXPECT_THROW(parse_hatchet(deep), InputError);
}

TEST(Reader, FileErrorsNamePathAndOffset) {
  try {
    load_hatchet(fixture("does_not_exist.json"));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("does_not_exist.json: cannot open"), std::string::npos);
  }
  try {
    load_hatchet(fixture("errors/truncated.json"));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated.json:"), std::string::npos) << e.what();
  }
}

// NaN and infinities as our writers spell them (null, +-1e999) and as triton.profiler does
// (null for all three): the file reads, the values are NaN / +-inf, distinct from "absent", and
// a NaN propagates into the inclusive sums above it.
constexpr const char* kNonFinite = R"J([{"frame":{"name":"ROOT"},"metrics":{"loss":0.0},
  "children":[{"frame":{"name":"a"},"metrics":{},"children":[
    {"frame":{"name":"nan"},"metrics":{"loss":null,"up":1e999,"vec":[1,null,2]}},
    {"frame":{"name":"inf"},"metrics":{"loss":1.5,"up":-1e999,"tiny":1e-999}}]},
  {"frame":{"name":"b"},"metrics":{"loss":2.5}}]},{}])J";

TEST(Reader, NonFiniteMetricValuesReadBack) {
  Profile p = parse_hatchet(kNonFinite);
  int32_t loss = p.find_metric("loss"), up = p.find_metric("up"), vec = p.find_metric("vec");
  auto stored = p.stored(loss);
  EXPECT_TRUE(std::isnan(stored[find_node(p, "nan")]));
  EXPECT_FALSE(is_absent(stored[find_node(p, "nan")]));
  EXPECT_TRUE(is_absent(stored[find_node(p, "a")]));
  EXPECT_EQ(p.stored(up)[find_node(p, "nan")], std::numeric_limits<double>::infinity());
  EXPECT_EQ(p.stored(up)[find_node(p, "inf")], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(p.stored(vec)[find_node(p, "nan")]));  // an array shows its sum
  double tiny = p.stored(p.find_metric("tiny"))[find_node(p, "inf")];
  EXPECT_EQ(tiny, 0.0);
  auto inc = p.inclusive(loss);
  EXPECT_TRUE(std::isnan(inc[find_node(p, "a")]) && !is_absent(inc[find_node(p, "a")]));
  EXPECT_TRUE(std::isnan(inc[0]) && !is_absent(inc[0]));
  EXPECT_EQ(inc[find_node(p, "b")], 2.5);       // a sibling subtree without NaN keeps its number
  EXPECT_TRUE(std::isnan(p.inclusive(up)[0]));  // inf + -inf

  RankFile f = parse_rank_file(kNonFinite);
  int32_t rloss = -1;
  for (size_t m = 0; m < f.metrics.size(); ++m) {
    if (f.metrics[m].name == "loss") rloss = static_cast<int32_t>(m);
  }
  ASSERT_GE(rloss, 0);
  auto rinc = f.inclusive(rloss);
  EXPECT_TRUE(std::isnan(rinc[0]) && !is_absent(rinc[0]));
}

TEST(Reader, NonFiniteNumbersOutsideMetricsAreStillRefused) {
  EXPECT_THROW(parse_hatchet(R"J([{"frame":{"name":"ROOT"},"metrics":{}},
    {"CUDA":{"0":{"arch":"90","num_sms":1e999}}}])J"),
               InputError);
}

TEST(Viewer, PrintsNanAndInfinities) {
  EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN(), false), "nan");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::quiet_NaN(), true), "nan");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity(), false), "inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity(), true), "-inf");
  EXPECT_EQ(format_value(kAbsent, false), "-");
}

// The viewer's own writer (-o, merge) keeps what the reader read: NaN null, +-inf +-1e999,
// whatever the names hold (the text a DOM-based writer once used to mark infinities included).
TEST(Reader, ProfileWriterRoundTripsNonFiniteValues) {
  Profile p = parse_hatchet(kNonFinite);
  Profile back = parse_hatchet(to_hatchet_json(p));
  int32_t up = back.find_metric("up");
  EXPECT_EQ(back.stored(up)[find_node(back, "nan")], std::numeric_limits<double>::infinity());
  EXPECT_EQ(back.stored(up)[find_node(back, "inf")], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(back.stored(back.find_metric("loss"))[find_node(back, "nan")]));

  p.nodes[static_cast<size_t>(find_node(p, "b"))].name = "\x01proton:+inf\x01";
  Profile odd = parse_hatchet(to_hatchet_json(p));
  EXPECT_EQ(odd.stored(odd.find_metric("up"))[find_node(odd, "nan")],
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(find_node(odd, "\x01proton:+inf\x01"), find_node(p, "\x01proton:+inf\x01"));
}

}  // namespace
}  // namespace proton::viewer
