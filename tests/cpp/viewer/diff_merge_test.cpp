#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "viewer/diff.h"
#include "viewer/merge.h"
#include "viewer/profile_writer.h"

namespace proton::viewer {
namespace {

using testing::find_node;
using testing::fixture;

TEST(Diff, AlignsByPathAndKeepsOneSidedFrames) {
  Profile before = load_hatchet(fixture("triton_style.json"));
  Profile after = load_hatchet(fixture("triton_style_new.json"));
  std::vector<std::string> w;
  auto a = derive_columns(after, {"time/ms"}, w);
  auto b = derive_columns(before, {"time/ms"}, w);
  DiffResult d = diff_profiles(after, a, before, b);
  EXPECT_NEAR(d.columns[0].values[0], 4.95 - 6.05, 1e-12);  // metadata not hidden here
  int32_t matmul = find_node(d.tree, "matmul_kernel");
  EXPECT_DOUBLE_EQ(d.columns[0].values[matmul], -1.0);
  EXPECT_EQ(d.presence[matmul], kBoth);
  int32_t softmax = find_node(d.tree, "softmax_kernel");
  EXPECT_DOUBLE_EQ(d.columns[0].values[softmax], 0.2);
  EXPECT_EQ(d.presence[softmax], kOnlyMain);
  int32_t add = find_node(d.tree, "_Z14vector_add_f32PKfS0_Pfi");
  EXPECT_DOUBLE_EQ(d.columns[0].values[add], -0.5);
  EXPECT_EQ(d.presence[add], kOnlyOther);
}

TEST(Merge, SumMeanMinMaxArgmax) {
  Profile r0 = load_hatchet(fixture("triton_style.json"));
  Profile r1 = load_hatchet(fixture("triton_style_new.json"));
  Profile m = merge_profiles({&r0, &r1});
  // Round-trip through the writer: merge output must be a profile both viewers can read.
  Profile back = parse_hatchet(to_hatchet_json(m));
  auto sum = back.inclusive(back.find_metric("time (ns)"));
  auto mean = back.stored(back.find_metric("time:mean (ns) (exc)"));
  auto low = back.stored(back.find_metric("time:min (ns) (exc)"));
  auto high = back.stored(back.find_metric("time:max (ns) (exc)"));
  auto arg = back.stored(back.find_metric("time:argmax (pty)"));
  int32_t matmul = find_node(back, "matmul_kernel");
  EXPECT_EQ(sum[matmul], 7e6);
  EXPECT_EQ(mean[matmul], 3.5e6);
  EXPECT_EQ(low[matmul], 3e6);
  EXPECT_EQ(high[matmul], 4e6);
  EXPECT_EQ(arg[matmul], 0);
  int32_t attn = find_node(back, "_attn_fwd");
  EXPECT_EQ(arg[attn], 1);
  int32_t softmax = find_node(back, "softmax_kernel");  // only in r1: r0 counts as 0
  EXPECT_EQ(low[softmax], 0);
  EXPECT_EQ(mean[softmax], 1e5);
  EXPECT_EQ(high[0], 6.05e6);  // ROOT's inclusive max, not a sum of maxima
  EXPECT_EQ(back.devices.size(), 1u);
  EXPECT_EQ(back.nodes[matmul].text_of("device_id"), "0");
}

}  // namespace
}  // namespace proton::viewer
