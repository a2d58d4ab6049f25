#include <gtest/gtest.h>

#include "analysis/advise.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::with_root;

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

// ROOT > step > {gemm: `compute_ns`, all-reduce: `comm_ns` of which `exposed_ns` ran alone}.
ProfileView step(double compute_ns, double comm_ns, double exposed_ns) {
  ProfileView v = with_root();
  int32_t s = v.add_node(0, "step");
  kernel(v, s, "gemm", 100, compute_ns);
  int32_t c = kernel(v, s, kAllReduce, 100, comm_ns);
  v.set(c, "exposed_comm (ns)", exposed_ns);
  return v;
}

TEST(CommExposed, FiresOnAnAllReduceThatRunsAfterTheCompute) {
  // 80 ms of GEMMs, 20 ms of all-reduce, 19 ms of it alone.
  auto found = comm_exposed(step(80e6, 20e6, 19e6));
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "comm_exposed");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", kAllReduce}));
  EXPECT_DOUBLE_EQ(f.number_of("comm_ns"), 20e6);
  EXPECT_DOUBLE_EQ(f.number_of("exposed_ns"), 19e6);
  EXPECT_DOUBLE_EQ(f.number_of("exposed_share"), 0.95);
  EXPECT_DOUBLE_EQ(f.number_of("share_of_kernel_time"), 0.19);
  EXPECT_DOUBLE_EQ(*f.saving_ns, 19e6);
  EXPECT_EQ(f.severity, Severity::kHigh);
  EXPECT_NE(f.suggestion.find("bucket"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.suggestion.find("async_op"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.suggestion.find("prefetch"), std::string::npos) << f.suggestion;
  EXPECT_NE(f.seen.find("95.0%"), std::string::npos) << f.seen;
  // advise() runs it.
  auto all = advise(step(80e6, 20e6, 19e6));
  EXPECT_EQ(testing::of_rule(all, "comm_exposed").size(), 1u);
}

TEST(CommExposed, QuietWhenTheCollectiveIsOverlapped) {
  // The same all-reduce beside the compute: its first and last buckets alone, 3 of 20 ms.
  EXPECT_TRUE(comm_exposed(step(80e6, 20e6, 3e6)).empty());
  // Exposed, but a sliver of the run: 0.5 ms of 1 s of kernels.
  EXPECT_TRUE(comm_exposed(step(1e9, 0.6e6, 0.5e6)).empty());
  // No measurement (a file of triton.profiler or an older Proton).
  ProfileView old = with_root();
  kernel(old, old.add_node(0, "step"), kAllReduce, 100, 20e6);
  EXPECT_TRUE(comm_exposed(old).empty());
  // A damaged value above the node's time.
  EXPECT_TRUE(comm_exposed(step(80e6, 20e6, 30e6)).empty());
}

}  // namespace
}  // namespace proton::analysis
