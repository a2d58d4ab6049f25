// The counted sets of scope metrics on their way to trace events: references, reuse.
#include "context/scope_metric_sets.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace proton {
namespace {

using testing::id;

TEST(ScopeMetricSets, ASetLastsUntilItsLastReferenceAndIsThenReused) {
  ScopeMetricSets& sets = ScopeMetricSets::global();
  const size_t live = sets.live();
  const uint32_t a = sets.add({{id("loss"), 0.5}});
  ASSERT_NE(a, 0u);
  EXPECT_EQ(sets.live(), live + 1);
  sets.retain(a);   // a trace keeps it
  sets.release(a);  // the staged tag is done with it
  ASSERT_EQ(sets.get(a).size(), 1u);
  EXPECT_EQ(sets.get(a)[0].first, id("loss"));
  sets.release(a);  // the trace let go
  EXPECT_EQ(sets.live(), live);
  const uint32_t b = sets.add({{id("step"), int64_t{7}}});
  EXPECT_EQ(b, a);  // reused, not grown
  ASSERT_EQ(sets.get(b).size(), 1u);
  EXPECT_EQ(sets.get(b)[0].first, id("step"));
  sets.release(b);
  sets.release(b);  // one release too many is ignored
  sets.release(0);
  EXPECT_EQ(sets.live(), live);
  EXPECT_TRUE(sets.get(0).empty());
  EXPECT_TRUE(sets.get(1u << 30).empty());  // never handed out
}

}  // namespace
}  // namespace proton
