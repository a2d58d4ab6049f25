#include "backends/instrumentation/staging_arena.h"

#include <gtest/gtest.h>

#include <vector>

namespace proton::instr {
namespace {

TEST(StagingArena, RangesAreAlignedDisjointAndWithinTheBuffer) {
  std::vector<uint8_t> buf(1024);
  StagingArena a;
  a.reset(buf.data(), buf.size());
  uint8_t* p = a.take(10);
  uint8_t* q = a.take(100);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(p, buf.data());
  EXPECT_EQ(q - p, 64);  // 10 bytes round up to one 64-byte unit
  EXPECT_EQ(a.in_use(), 64u + 128u);
  EXPECT_EQ(StagingArena::rounded(10) + StagingArena::rounded(100), a.in_use());
  EXPECT_EQ(a.take(1024), nullptr);  // does not fit next to them
}

TEST(StagingArena, BatchesGiveBackOutOfOrderAndGapsAreReused) {
  std::vector<uint8_t> buf(4 * 256);
  StagingArena a;
  a.reset(buf.data(), buf.size());
  uint8_t* r[4];
  for (auto& p : r)
    ASSERT_NE(p = a.take(256), nullptr);
  EXPECT_EQ(a.take(1), nullptr);  // full
  EXPECT_TRUE(a.give(r[1]));      // decoders finish out of order
  EXPECT_TRUE(a.give(r[2]));
  EXPECT_EQ(a.take(512), r[1]);  // the two neighbours' room, as one range
  EXPECT_TRUE(a.give(r[0]));
  EXPECT_EQ(a.take(200), r[0]);
  EXPECT_FALSE(a.give(r[0] + 64));  // not a range it handed out
  EXPECT_EQ(a.in_use(), 1024u);
}

TEST(StagingArena, NoBufferHandsOutNothing) {
  StagingArena a;
  EXPECT_EQ(a.take(1), nullptr);
  uint8_t x = 0;
  EXPECT_FALSE(a.give(&x));
  std::vector<uint8_t> buf(128);
  a.reset(buf.data(), buf.size());
  EXPECT_EQ(a.take(129), nullptr);  // larger than the buffer
  EXPECT_NE(a.take(128), nullptr);
  a.reset(buf.data(), buf.size());  // a fresh arena forgets what was taken
  EXPECT_EQ(a.in_use(), 0u);
}

}  // namespace
}  // namespace proton::instr
