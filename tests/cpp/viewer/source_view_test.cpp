// proton-viewer --source: a pcsampling profile's kernel shown as annotated source.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "test_util.h"
#include "viewer/source_view.h"

namespace proton::viewer {
namespace {

using testing::run;

std::string line_node(const std::string& name, int n, const std::string& stalls) {
  return R"J({"frame":{"name":")J" + name + R"J(","type":"function"},"metrics":{"num_samples":)J" +
         std::to_string(n) + "," + stalls + R"J(},"children":[]})J";
}

std::string kernel_node(const std::string& file) {
  return R"J({"frame":{"name":"attn_kernel","type":"function"},"metrics":{"time (ns)":100,)J"
         R"J("count":1,"device_id":"0","device_type":"CUDA"},"children":[)J" +
         line_node(
             file + ":3@attn_kernel", 80,
             R"J("num_stalled_samples":70,"stalled_long_scoreboard":70,"stalled_selected":10)J") +
         "," +
         line_node(file + ":5@attn_kernel", 20, R"J("stalled_wait":15,"stalled_selected":5)J") +
         "," + line_node("pc:0x100-0x1ff@attn_kernel", 4, R"J("stalled_misc":4)J") + "]}";
}

class SourceView : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("proton_source_view_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    src_ = (dir_ / "attn.py").string();
    std::ofstream(src_) << "def attn_kernel(x):\n    i = 0\n    v = load(x + i)\n"
                           "    w = v * 2\n    store(x, w)\n";
    std::string root =
        R"J([{"frame":{"name":"ROOT","type":"function"},"metrics":{},"children":[)J"
        R"J({"frame":{"name":"prefill","type":"function"},"metrics":{},"children":[)J" +
        kernel_node(src_) +
        R"J(]},{"frame":{"name":"decode","type":"function"},"metrics":{},)J"
        R"J("children":[)J" +
        kernel_node(src_) + R"J(]}]},{}])J";
    profile_ = (dir_ / "p.hatchet").string();
    std::ofstream(profile_) << root;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string src_, profile_;
};

TEST_F(SourceView, SumsCallPathsPerLineWithStallsAndFamilies) {
  auto kernels = collect_source(load_hatchet(profile_), "attn");
  ASSERT_EQ(kernels.size(), 1u);
  const KernelSource& k = kernels[0];
  EXPECT_EQ(k.call_paths, 2);
  EXPECT_EQ(k.samples, 208);
  ASSERT_EQ(k.lines.size(), 3u);
  EXPECT_EQ(k.lines[0].line, 3);
  EXPECT_EQ(k.lines[0].samples, 160);
  EXPECT_EQ(k.lines[2].file, "") << "PC ranges come last";
  ASSERT_FALSE(k.families.empty());
  EXPECT_EQ(k.families[0].first, "memory");
  EXPECT_EQ(k.families[0].second, 140);
}

TEST_F(SourceView, PrintsTheSourceTextNextToItsSamples) {
  auto r = run({"--source", "attn_kernel", profile_});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("kernel attn_kernel: 208 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stall families:  memory"), std::string::npos) << r.out;
  // The sampled line shows its text and top stalls; the unsampled line 4 shows its text only.
  EXPECT_NE(r.out.find("v = load(x + i)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("long_scoreboard 87.5%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("w = v * 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pc:0x100-0x1ff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("misc 100.0%"), std::string::npos) << r.out;
}

TEST_F(SourceView, WithoutTheFileOnlySampledLinesShow) {
  std::filesystem::remove(src_);
  auto r = run({"--source", "attn", profile_});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("w = v * 2"), std::string::npos);
  EXPECT_NE(r.out.find("     3  "), std::string::npos) << r.out;
}

TEST_F(SourceView, TheHtmlExportShowsTheSourceOnClick) {
  std::string html = (dir_ / "p.html").string();
  auto r = run({"--output-format", "html", "-o", html, profile_});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream in(html);
  std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("\"sources\""), std::string::npos);
  EXPECT_NE(page.find("long_scoreboard 87.5%"), std::string::npos);
  EXPECT_NE(page.find("id=\"source\""), std::string::npos);
}

TEST_F(SourceView, AnUnknownKernelIsAUsageError) {
  auto r = run({"--source", "nope", profile_});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no kernel matching 'nope'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace proton::viewer
