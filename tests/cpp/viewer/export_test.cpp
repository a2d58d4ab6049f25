#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "analysis/advise.h"
#include "test_util.h"
#include "viewer/advise_view.h"
#include "viewer/flame_export.h"
#include "viewer/html_export.h"
#include "viewer/json_export.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {
namespace {

using testing::fixture;

// A fixture profile with its metadata frames hidden, its time column and every node shown.
class ExportOf : public ::testing::Test {
 protected:
  void load(const char* name) {
    p = hide_metadata(load_hatchet(fixture(name)));
    std::vector<std::string> w;
    column = derive_columns(p, {"time/ns"}, w)[0];
    visible.assign(p.nodes.size(), 1);
  }
  Profile p;
  Column column;
  std::vector<char> visible;
};

class Export : public ExportOf {
 protected:
  void SetUp() override { load("triton_style.json"); }
};

TEST_F(Export, FoldedStacksCarryOwnValues) {
  std::string folded = to_folded(p, column, visible, {});
  EXPECT_EQ(folded,
            "/home/user/proj/train.py:12@main;matmul;matmul_kernel 4000000\n"
            "/home/user/proj/train.py:12@main;attention;_attn_fwd 1500000\n"
            "vector_add_f32 500000\n");
}

TEST_F(Export, JsonTreeHasTheShownFramesNamesAndColumns) {
  std::vector<std::string> w;
  auto columns = derive_columns(p, {"time/ms", "tflop16/s"}, w);
  visible[static_cast<size_t>(testing::find_node(p, "attention"))] = 0;  // hidden with its subtree
  auto doc = nlohmann::json::parse(to_json_tree(p, columns, visible, {}));
  ASSERT_EQ(doc["columns"].size(), 2u);
  EXPECT_EQ(doc["columns"][0]["name"], "time/ms");
  EXPECT_EQ(doc["columns"][0]["integral"], false);
  auto& nodes = doc["nodes"];
  ASSERT_EQ(nodes.size(), 5u);  // ROOT, main, matmul, matmul_kernel, vector_add_f32
  EXPECT_EQ(nodes[0]["name"], "ROOT");
  EXPECT_EQ(nodes[0]["parent"], -1);
  EXPECT_DOUBLE_EQ(nodes[0]["values"][0].get<double>(), 6.0);
  EXPECT_EQ(nodes[3]["name"], "matmul_kernel");
  EXPECT_EQ(nodes[3]["parent"], 2);
  EXPECT_DOUBLE_EQ(nodes[3]["values"][0].get<double>(), 4.0);
  EXPECT_EQ(nodes[4]["name"], "vector_add_f32");
  EXPECT_EQ(nodes[4]["full_name"], "vector_add_f32(float const*, float const*, float*, int)");
  EXPECT_TRUE(nodes[4]["values"][1].is_null());  // no flops there
}

TEST_F(Export, SpeedscopeIsValidAndSumsToTheRoot) {
  auto doc = nlohmann::json::parse(to_speedscope(p, column, visible, {}, "t"));
  EXPECT_EQ(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
  auto& prof = doc["profiles"][0];
  EXPECT_EQ(prof["type"], "sampled");
  EXPECT_EQ(prof["unit"], "nanoseconds");
  EXPECT_EQ(prof["endValue"].get<double>(), 6e6);
  EXPECT_EQ(prof["samples"].size(), prof["weights"].size());
  for (auto& sample : prof["samples"]) {
    for (auto& f : sample)
      EXPECT_LT(f.get<size_t>(), doc["shared"]["frames"].size());
  }
}

TEST_F(Export, HtmlIsSelfContainedAndEscapesScriptEnds) {
  p.nodes[1].name = "</script><b>";
  std::string html = to_html(p, column, visible, {}, "t<x>");
  EXPECT_EQ(html.find("</script><b>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cb>"), std::string::npos);
  EXPECT_NE(html.find("<title>t&lt;x&gt; - proton-viewer</title>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing fetched from the network
  EXPECT_EQ(html.find("src="), std::string::npos);
}

// The data element of an HTML page, parsed.
nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script id=\"profile-data\" type=\"application/json\">";
  auto begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  begin += open.size();
  return nlohmann::json::parse(html.substr(begin, html.find("</script>", begin) - begin));
}

// The names from below the root to the node marked "a": `at`, if the subtree has it.
bool anchor_path(const nlohmann::json& node, int64_t at, std::vector<std::string>& path) {
  if (node.contains("a") && node["a"] == at) return true;
  for (const auto& c : node.value("c", nlohmann::json::array())) {
    path.push_back(c["n"]);
    if (anchor_path(c, at, path)) return true;
    path.pop_back();
  }
  return false;
}

class HtmlFindings : public ExportOf {
 protected:
  void SetUp() override { load("advise_profile.json"); }
};

TEST_F(HtmlFindings, EachFindingLinksToItsFrame) {
  auto findings = analysis::advise(analysis_view(p));
  std::string html = to_html(p, column, visible, {}, "t", findings);
  auto data = page_data(html);
  ASSERT_EQ(findings.size(), 4u);  // launch_bound, roofline, hint.host_calls, hint.pcsampling
  ASSERT_EQ(data["findings"].size(), findings.size());
  for (size_t k = 0; k < findings.size(); ++k) {
    const auto& shown = data["findings"][k];
    EXPECT_EQ(shown["rule"], findings[k].rule);
    EXPECT_EQ(shown["frame"], nlohmann::json(findings[k].frame));
    EXPECT_EQ(shown["suggestion"], findings[k].suggestion);
    std::vector<std::string> path;
    ASSERT_TRUE(anchor_path(data["tree"], shown["at"], path)) << shown.dump();
    EXPECT_EQ(path, findings[k].frame) << findings[k].rule;
  }
  EXPECT_EQ(data["findings"][0]["frame"], nlohmann::json({"step"}));
  EXPECT_DOUBLE_EQ(data["findings"][0]["saving_ns"].get<double>(), 32e6);
  EXPECT_TRUE(data["findings"][2]["saving_ns"].is_null());
  EXPECT_NE(html.find("id=\"findings\""), std::string::npos);
}

TEST_F(HtmlFindings, HiddenFrameLinksToItsNearestShownParent) {
  visible[static_cast<size_t>(testing::find_node(p, "copy_kernel"))] = 0;
  auto data = page_data(to_html(p, column, visible, {}, "t", analysis::advise(analysis_view(p))));
  ASSERT_EQ(data["findings"][1]["rule"], "roofline");
  EXPECT_EQ(data["findings"][1]["frame"], nlohmann::json({"loss", "copy_kernel"}));
  std::vector<std::string> path;
  ASSERT_TRUE(anchor_path(data["tree"], data["findings"][1]["at"], path));
  EXPECT_EQ(path, std::vector<std::string>{"loss"});
}

TEST_F(HtmlFindings, HostileFrameNameIsEscaped) {
  p.nodes[static_cast<size_t>(testing::find_node(p, "copy_kernel"))].name =
      "<!--<script></script><img src=x onerror=alert> \"q\" \xff";
  std::string html = to_html(p, column, visible, {}, "t", analysis::advise(analysis_view(p)));
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_EQ(html.find("</script><"), std::string::npos);
  auto data = page_data(html);  // still valid JSON: the bad byte replaced
  ASSERT_EQ(data["findings"][1]["rule"], "roofline");
  EXPECT_EQ(data["findings"][1]["frame"][1],
            "<!--<script></script><img src=x onerror=alert> \"q\" \xef\xbf\xbd");
}

TEST_F(HtmlFindings, NoFindingsGiveNoList) {
  std::string html = to_html(p, column, visible, {}, "t", {});
  auto data = page_data(html);
  EXPECT_FALSE(data.contains("findings"));
  EXPECT_NE(html.find("No findings for this profile."), std::string::npos);
}

// A flame graph has no width for NaN or infinity: such frames draw nothing, and their parents
// keep their other children's widths.
TEST(ExportNonFinite, FoldedStacksLeaveNonFiniteValuesOut) {
  Profile p = parse_hatchet(R"J([{"frame":{"name":"ROOT"},"metrics":{},"children":[
    {"frame":{"name":"a"},"metrics":{"m":2},"children":[
      {"frame":{"name":"inf"},"metrics":{"m":1e999}},{"frame":{"name":"nan"},"metrics":{"m":null}},
      {"frame":{"name":"ok"},"metrics":{"m":3}}]}]},{}])J");
  std::vector<std::string> w;
  Column column = derive_columns(p, {"m"}, w)[0];
  std::vector<char> visible(p.nodes.size(), 1);
  EXPECT_EQ(to_folded(p, column, visible, {}), "a;ok 3\n");
  auto doc = nlohmann::json::parse(to_speedscope(p, column, visible, {}, "t"));
  EXPECT_FALSE(doc.dump().empty());
}

}  // namespace
}  // namespace proton::viewer
