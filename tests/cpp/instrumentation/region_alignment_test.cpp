#include "session/region_alignment.h"

#include <gtest/gtest.h>

namespace proton {
namespace {

RegionAlignment::Batch batch(NameId kernel, uint64_t first) {
  RegionAlignment::Batch b;
  b.kernel = kernel;
  b.spans.push_back({7, 1, 0, 0, first + 50, first + 80});
  b.spans.push_back({7, 1, 0, 1, first, first + 20});
  return b;
}

TEST(RegionAlignment, PairsTheNthBatchWithTheNthKernelInEitherOrder) {
  RegionAlignment a;
  // Kernel first: the batch gets its start.
  EXPECT_FALSE(a.on_kernel(3, 1000).has_value());
  auto start = a.on_regions(batch(3, 5'000'000));
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(*start, 1000u);
  // Batches first (two launches): kernels pick them up in order.
  EXPECT_FALSE(a.on_regions(batch(3, 6'000'000)).has_value());
  EXPECT_FALSE(a.on_regions(batch(3, 7'000'000)).has_value());
  auto b1 = a.on_kernel(3, 2000);
  auto b2 = a.on_kernel(3, 3000);
  ASSERT_TRUE(b1 && b2);
  EXPECT_EQ(RegionAlignment::first_start(*b1), 6'000'000u);
  EXPECT_EQ(RegionAlignment::first_start(*b2), 7'000'000u);
  // Other kernels never pair with these regions.
  EXPECT_FALSE(a.on_kernel(4, 4000).has_value());
  EXPECT_FALSE(a.on_regions(batch(5, 1)).has_value());
  EXPECT_EQ(a.take_unmatched().size(), 1u);
}

TEST(RegionAlignment, KernelsThatNeverGetRegionsStayBounded) {
  RegionAlignment a;
  for (uint64_t i = 0; i < 5000; ++i)
    a.on_kernel(9, i);
  auto start = a.on_regions(batch(9, 0));
  ASSERT_TRUE(start.has_value());
  EXPECT_EQ(*start, 5000u - 1024u);  // the oldest were let go
}

}  // namespace
}  // namespace proton
