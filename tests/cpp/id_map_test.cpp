#include "common/id_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace proton {
namespace {

struct Rec {
  uint64_t a = 0;
  uint32_t b = 0;
};

using Map = IdMap<Rec>;

std::vector<std::pair<uint64_t, uint64_t>> items_of(Map& m) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  m.for_each([&](uint64_t key, Rec& r) { out.emplace_back(key, r.a); });
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> items_of(
    const std::unordered_map<uint64_t, uint64_t>& oracle) {
  std::vector<std::pair<uint64_t, uint64_t>> out(oracle.begin(), oracle.end());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(IdMap, InsertFindErase) {
  Map m;
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.find(5), nullptr);
  auto [item, inserted] = m.try_emplace(5, Rec{50, 1});
  EXPECT_TRUE(inserted);
  EXPECT_EQ(item->key(), 5u);
  EXPECT_EQ(item->value.a, 50u);
  EXPECT_EQ(m.size(), 1u);
  ASSERT_NE(m.find(5), nullptr);
  EXPECT_EQ(m.find(5)->value.b, 1u);
  EXPECT_EQ(m.find(6), nullptr);
  EXPECT_TRUE(m.erase(5));
  EXPECT_FALSE(m.erase(5));
  EXPECT_EQ(m.find(5), nullptr);
  EXPECT_TRUE(m.empty());
}

TEST(IdMap, TryEmplaceKeepsTheExistingItem) {
  Map m;
  m.try_emplace(9, Rec{1, 0});
  auto [item, inserted] = m.try_emplace(9, Rec{2, 0});
  EXPECT_FALSE(inserted);
  EXPECT_EQ(item->value.a, 1u);
  item->value.a = 3;  // items are writable in place
  EXPECT_EQ(m.find(9)->value.a, 3u);
  EXPECT_EQ(m.size(), 1u);
}

TEST(IdMap, KeyZeroIsAnOrdinaryKey) {
  Map m;
  EXPECT_EQ(m.find(0), nullptr);
  EXPECT_FALSE(m.erase(uint64_t{0}));
  m.try_emplace(0, Rec{7, 0});
  m.try_emplace(1, Rec{8, 0});
  EXPECT_EQ(m.size(), 2u);
  ASSERT_NE(m.find(0), nullptr);
  EXPECT_EQ(m.find(0)->key(), 0u);
  EXPECT_EQ(m.find(0)->value.a, 7u);
  EXPECT_FALSE(m.try_emplace(0, Rec{9, 0}).second);
  EXPECT_EQ(items_of(m), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 7}, {1, 8}}));
  m.erase(m.find(0));
  EXPECT_EQ(m.find(0), nullptr);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.find(1)->value.a, 8u);
}

TEST(IdMap, GrowsByDoublingAndKeepsEveryItem) {
  Map m(16);
  EXPECT_EQ(m.capacity(), 16u);
  for (uint64_t k = 1; k <= 12; ++k)
    m.try_emplace(k, Rec{k * 10, 0});
  EXPECT_EQ(m.capacity(), 16u);  // 12 of 16 is the most before growing
  m.try_emplace(13, Rec{130, 0});
  EXPECT_EQ(m.capacity(), 32u);
  for (uint64_t k = 14; k <= 1000; ++k)
    m.try_emplace(k, Rec{k * 10, 0});
  EXPECT_EQ(m.size(), 1000u);
  EXPECT_EQ(m.capacity(), 2048u);
  for (uint64_t k = 1; k <= 1000; ++k) {
    ASSERT_NE(m.find(k), nullptr) << k;
    EXPECT_EQ(m.find(k)->value.a, k * 10);
  }
  EXPECT_EQ(m.find(1001), nullptr);
}

TEST(IdMap, CapacityIsAPowerOfTwoOfAtLeastEight) {
  EXPECT_EQ(Map(0).capacity(), 8u);
  EXPECT_EQ(Map(100).capacity(), 128u);
}

TEST(IdMap, ClearKeepsCapacityResetGivesItBack) {
  Map m(8);
  for (uint64_t k = 0; k < 100; ++k)
    m.try_emplace(k, Rec{k, 0});
  size_t grown = m.capacity();
  EXPECT_GT(grown, 8u);
  m.clear();
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.capacity(), grown);
  EXPECT_EQ(m.find(0), nullptr);
  EXPECT_EQ(m.find(50), nullptr);
  m.try_emplace(50, Rec{5, 0});
  m.reset();
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.capacity(), 8u);
  EXPECT_EQ(m.find(50), nullptr);
  m.try_emplace(3, Rec{3, 0});
  EXPECT_EQ(m.find(3)->value.a, 3u);
}

// Keys whose products share their top bits land on the same home slot: long runs, and runs
// that wrap around the end of the array, are where backward-shift deletion can go wrong.
TEST(IdMap, CollidingKeysStayReachableThroughErases) {
  Map m(64);  // 6 home bits; stays at 64 slots for up to 48 items
  std::vector<uint64_t> same_home;
  uint64_t want = 62;  // next to last: the run of 20 wraps around the end
  for (uint64_t k = 1; same_home.size() < 20; ++k) {
    if (((k * 0x9E3779B97F4A7C15ull) >> 58) == want) same_home.push_back(k);
  }
  for (uint64_t k : same_home)
    m.try_emplace(k, Rec{k, 0});
  EXPECT_EQ(m.capacity(), 64u);
  // Erase from the middle, the front and the back of the run, checking all the others each time.
  std::vector<uint64_t> order = {same_home[10], same_home[0], same_home[19], same_home[5]};
  std::vector<uint64_t> left = same_home;
  for (uint64_t gone : order) {
    ASSERT_TRUE(m.erase(gone));
    left.erase(std::find(left.begin(), left.end(), gone));
    for (uint64_t k : left) {
      ASSERT_NE(m.find(k), nullptr) << "lost " << k << " after erasing " << gone;
      EXPECT_EQ(m.find(k)->value.a, k);
    }
    EXPECT_EQ(m.find(gone), nullptr);
  }
  EXPECT_EQ(m.size(), left.size());
}

// Random inserts, erases (by key and by item) and lookups, checked against std::unordered_map,
// over key ranges small enough to collide and repeat often; the map must end where the oracle
// does and must not keep growing while the number of items stays bounded.
TEST(IdMap, MatchesUnorderedMapUnderRandomChurn) {
  for (uint64_t key_range : {uint64_t{16}, uint64_t{300}, uint64_t{5000}}) {
    std::mt19937_64 rng(key_range);
    Map m(8);
    std::unordered_map<uint64_t, uint64_t> oracle;
    for (int step = 0; step < 200000; ++step) {
      uint64_t key = rng() % key_range;  // includes 0
      uint64_t value = rng();
      switch (rng() % 5) {
        case 0:
        case 1: {
          auto [item, inserted] = m.try_emplace(key, Rec{value, 0});
          auto [it, oracle_inserted] = oracle.try_emplace(key, value);
          ASSERT_EQ(inserted, oracle_inserted);
          ASSERT_EQ(item->key(), key);
          ASSERT_EQ(item->value.a, it->second);
          break;
        }
        case 2:
          ASSERT_EQ(m.erase(key), oracle.erase(key) == 1) << "key " << key;
          break;
        case 3: {  // find then erase the found item, as the record processor does
          Map::Item* item = m.find(key);
          auto it = oracle.find(key);
          ASSERT_EQ(item != nullptr, it != oracle.end());
          if (item != nullptr) {
            ASSERT_EQ(item->value.a, it->second);
            m.erase(item);
            oracle.erase(it);
          }
          break;
        }
        default: {
          Map::Item* item = m.find(key);
          auto it = oracle.find(key);
          ASSERT_EQ(item != nullptr, it != oracle.end());
          if (item != nullptr) {
            ASSERT_EQ(item->value.a, it->second);
          }
        }
      }
      ASSERT_EQ(m.size(), oracle.size());
      if (step % 10000 == 0) {
        ASSERT_EQ(items_of(m), items_of(oracle));
      }
    }
    EXPECT_EQ(items_of(m), items_of(oracle));
    EXPECT_LE(m.capacity(), std::bit_ceil(key_range * 4 / 3 + 1));
  }
}

// The record processor's pattern: a sliding window of consecutive ids, inserted in batches and
// erased roughly in order. Capacity settles, so steady state allocates nothing.
TEST(IdMap, SlidingWindowOfIdsSettlesItsCapacity) {
  Map m;
  std::mt19937_64 rng(1);
  uint64_t next = 1;
  std::vector<uint64_t> live;
  size_t settled = 0;
  for (int batch = 0; batch < 400; ++batch) {
    for (int i = 0; i < 1000; ++i) {
      m.try_emplace(next, Rec{next, 0});
      live.push_back(next++);
    }
    std::shuffle(live.begin(), live.end(), rng);  // records complete out of launch order
    while (live.size() > 200) {
      ASSERT_TRUE(m.erase(live.back()));
      live.pop_back();
    }
    if (batch == 10) settled = m.capacity();
    if (batch > 10) {
      ASSERT_EQ(m.capacity(), settled);
    }
  }
  EXPECT_EQ(m.size(), live.size());
  for (uint64_t k : live)
    ASSERT_NE(m.find(k), nullptr);
}

}  // namespace
}  // namespace proton
