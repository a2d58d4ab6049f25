#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "viewer/flame_export.h"
#include "viewer/html_export.h"
#include "viewer/json_export.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {
namespace {

using testing::fixture;

class Export : public ::testing::Test {
 protected:
  void SetUp() override {
    p = hide_metadata(load_hatchet(fixture("triton_style.json")));
    std::vector<std::string> w;
    column = derive_columns(p, {"time/ns"}, w)[0];
    visible.assign(p.nodes.size(), 1);
  }
  Profile p;
  Column column;
  std::vector<char> visible;
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
  EXPECT_NE(html.find("<\\/script><b>"), std::string::npos);
  EXPECT_NE(html.find("<title>t&lt;x&gt; - proton-viewer</title>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing fetched from the network
  EXPECT_EQ(html.find("src="), std::string::npos);
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
