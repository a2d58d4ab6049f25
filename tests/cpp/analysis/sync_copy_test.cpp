#include <gtest/gtest.h>

#include "analysis/advise.h"
#include "analysis/rules.h"
#include "synthetic.h"

namespace proton::analysis {
namespace {

using testing::kernel;
using testing::of_rule;
using testing::with_root;

int32_t copy_node(ProfileView& v, int32_t caller, const char* name, double calls, double ns,
                  double bytes) {
  int32_t n = v.add_node(caller, name);
  v.set(n, "memcpy_time (ns)", ns);
  v.set(n, "memcpy_calls", calls);
  v.set(n, "memcpy_bytes", bytes);
  return n;
}

constexpr double kMiB = 1024 * 1024;

// ROOT > step > data.py:30@to_gpu: 100 pageable 64 MiB copies at 6 GB/s, beside 1 s of kernels.
ProfileView pageable_batches() {
  ProfileView v = with_root();
  int32_t step = v.add_node(0, "step");
  kernel(v, step, "gemm", 100, 1e9);
  int32_t frame = v.add_node(step, "data.py:30@to_gpu");
  double bytes = 100 * 64 * kMiB;
  copy_node(v, frame, "memcpy HtoD (pageable)", 100, bytes / 6e9 * 1e9, bytes);
  return v;
}

TEST(SyncCopy, FiresOnRepeatedPageableCopies) {
  auto found = sync_copy(pageable_batches());
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.rule, "sync_copy");
  EXPECT_EQ(f.frame, (std::vector<std::string>{"step", "data.py:30@to_gpu"}));
  double bytes = 100 * 64 * kMiB;
  EXPECT_DOUBLE_EQ(f.number_of("bytes"), bytes);
  EXPECT_DOUBLE_EQ(f.number_of("calls"), 100);
  EXPECT_NEAR(f.number_of("bytes_per_s"), 6e9, 1);
  // Pinning alone: the copy at kPinnedCopyBytesPerS instead of 6 GB/s.
  ASSERT_TRUE(f.saving_ns);
  EXPECT_NEAR(*f.saving_ns, bytes / 6e9 * 1e9 - bytes / kPinnedCopyBytesPerS * 1e9, 1);
  EXPECT_EQ(f.severity, Severity::kHigh);  // ~0.85 s against 1 s of kernels
  EXPECT_NE(f.suggestion.find("pin_memory()"), std::string::npos);
  EXPECT_NE(f.suggestion.find("non_blocking=True"), std::string::npos);
  EXPECT_NE(f.seen.find("moved 6.2 GB in 1.12 s (6.0 GB/s)"), std::string::npos) << f.seen;
}

TEST(SyncCopy, ABlockingPinnedCopyHasNoEstimateAndAtMostMediumSeverity) {
  ProfileView v = with_root();
  kernel(v, 0, "k", 10, 1e6);
  copy_node(v, v.add_node(0, "loop"), "memcpy HtoD (blocking)", 50, 5e8, 50 * 64 * kMiB);
  auto found = sync_copy(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].saving_ns.has_value());
  EXPECT_EQ(found[0].severity, Severity::kMedium);
  EXPECT_EQ(std::get<std::string>(found[0].evidence[1].second), "pinned or device");
}

TEST(SyncCopy, DeviceToHostCopiesAreToldToUseAPinnedBuffer) {
  ProfileView v = with_root();
  copy_node(v, v.add_node(0, "eval"), "memcpy DtoH (pageable)", 20, 2e8, 20 * 16 * kMiB);
  auto found = sync_copy(v);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].suggestion.find("pin_memory=True"), std::string::npos);
}

TEST(SyncCopy, QuietOnAFewCopiesSmallReadsAndFastPageableCopies) {
  ProfileView v = with_root();
  int32_t load = v.add_node(0, "load_weights");
  copy_node(v, load, "memcpy HtoD (pageable)", kMinHostCalls - 1, 1e9, 4e9);  // setup
  int32_t loop = v.add_node(0, "loop");
  copy_node(v, loop, "memcpy DtoH (pageable)", 1000, 1e8, 1000 * 4);  // host_sync's
  auto found = sync_copy(v);
  EXPECT_TRUE(found.empty());
  // Already at the pinned rate: a finding, but no saving to claim for pinning.
  ProfileView fast = with_root();
  copy_node(fast, fast.add_node(0, "loop"), "memcpy HtoD (pageable)", 100, 1e6,
            kPinnedCopyBytesPerS * 1e-3);
  auto quick = sync_copy(fast);
  ASSERT_EQ(quick.size(), 1u);
  EXPECT_FALSE(quick[0].saving_ns.has_value());
  EXPECT_EQ(quick[0].severity, Severity::kLow);
}

TEST(SyncCopy, IsTheTopAnswerOfAPageableLoop) {
  auto all = advise(pageable_batches());
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all[0].rule, "sync_copy");
  EXPECT_TRUE(of_rule(all, "host_sync").empty());
}

}  // namespace
}  // namespace proton::analysis
