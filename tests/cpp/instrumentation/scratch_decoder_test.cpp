#include "backends/instrumentation/scratch_decoder.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "scratch_builder.h"

namespace proton::instr {
namespace {

using testing::Event;
using testing::ScratchBuilder;

KernelLayout layout_of(const ScratchBuilder& b, uint32_t warps, std::vector<uint32_t> units = {}) {
  return KernelLayout{warps, b.slice_bytes(), std::move(units), 0};
}

TEST(ScratchDecoder, PairsStartAndEndPerWarpAndCta) {
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<Event>> ev(4);
  for (uint32_t w = 0; w < 4; ++w)
    ev[w] = {{false, 0, 100 + w}, {true, 0, 300 + w}};
  b.add_cta(0, 7, ev);
  b.add_cta(1, 9, ev, 5000);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 4));
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_EQ(r.ctas.size(), 2u);
  EXPECT_EQ(r.ctas[1].sm, 9u);
  EXPECT_EQ(r.ctas[1].init_ns, 5000u);
  EXPECT_EQ(r.ctas[0].first_clock, 100u);
  ASSERT_EQ(r.samples.size(), 8u);
  for (const RegionSample& s : r.samples)
    EXPECT_EQ(s.end_cycle - s.start_cycle, 200u);
  EXPECT_EQ(r.samples[3].unit, 3u);
  EXPECT_EQ(r.samples[5].cta, 1u);
  EXPECT_EQ(r.unmatched_events, 0u);
}

TEST(ScratchDecoder, SumsEachCtasSlowestWarpAndTheWarpsThatRanARegion) {
  // Scope 0 on all four warps: warp 0 takes 1,000 cycles (twice over 500), the others 100, in
  // CTA 0; in CTA 1 every warp takes 100. Scope 1 runs on warp 3 alone.
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<Event>> ev(4);
  ev[0] = {{false, 0, 0}, {true, 0, 500}, {false, 0, 600}, {true, 0, 1100}};
  for (uint32_t w = 1; w < 4; ++w)
    ev[w] = {{false, 0, 10}, {true, 0, 110}};
  ev[3].push_back({false, 1, 200});
  ev[3].push_back({true, 1, 260});
  b.add_cta(0, 0, ev);
  std::vector<std::vector<Event>> even(4);
  for (uint32_t w = 0; w < 4; ++w)
    even[w] = {{false, 0, 10}, {true, 0, 110}};
  b.add_cta(1, 1, even);
  for (bool keep : {true, false}) {
    DecodeResult r;
    decode_scratch_into(b.bytes(), layout_of(b, 4), r, keep);
    EXPECT_EQ(r.sums[0].cycles, 1000u + 3 * 100 + 4 * 100);
    EXPECT_EQ(r.sums[0].count, 5u + 4);
    EXPECT_EQ(r.sums[0].units, 8u);
    EXPECT_EQ(r.sums[0].ctas, 2u);
    EXPECT_EQ(r.sums[0].slowest_unit_cycles, 1000u + 100);
    EXPECT_EQ(r.sums[1].units, 1u);
    EXPECT_EQ(r.sums[1].ctas, 1u);
    EXPECT_EQ(r.sums[1].slowest_unit_cycles, 60u);
    EXPECT_EQ(r.sums[2].units, 0u);
  }
}

TEST(ScratchDecoder, ScopeIdsPast63KeepTheirSpreadToo) {
  // Scope 200 on both warps (300 and 100 cycles, one of them 0-cycle twice after), then on one
  // warp of a second CTA: the rare path for ids past the 64-bit mask.
  ScratchBuilder b(2, 2048, 2);
  b.add_cta(0, 0,
            {{{false, 200, 0}, {true, 200, 300}},
             {{false, 200, 0}, {true, 200, 100}, {false, 200, 150}, {true, 200, 150}}});
  b.add_cta(1, 0, {{{false, 200, 0}, {true, 200, 40}}, {}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 2));
  EXPECT_EQ(r.sums[200].cycles, 440u);
  EXPECT_EQ(r.sums[200].units, 3u);
  EXPECT_EQ(r.sums[200].ctas, 2u);
  EXPECT_EQ(r.sums[200].slowest_unit_cycles, 300u + 40);
}

TEST(ScratchDecoder, NestedScopesAndLongClock) {
  ScratchBuilder b(1, 1024, 1);
  uint64_t hi = uint64_t{0x123} << 32;
  b.add_cta(0, 0,
            {{{false, 1, hi + 10}, {false, 2, hi + 20}, {true, 2, hi + 50}, {true, 1, hi + 90}}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].scope, 2u);
  EXPECT_EQ(r.samples[0].end_cycle - r.samples[0].start_cycle, 30u);
  EXPECT_EQ(r.samples[1].start_cycle, hi + 10);
  EXPECT_EQ(r.samples[1].end_cycle - r.samples[1].start_cycle, 80u);
}

TEST(ScratchDecoder, Clock32WrapIsUndone) {
  ScratchBuilder b(1, 1024, 1);
  b.add_cta(0, 0, {{{false, 0, 0xfffffff0u}, {true, 0, 0x10u}}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].end_cycle - r.samples[0].start_cycle, 0x20u);
}

TEST(ScratchDecoder, CircularWrapKeepsNewestEventsInOrder) {
  // 64-byte data, one unit: 8 events fit. Write 11 regions (22 events): the first 14 are lost.
  ScratchBuilder b(1, 64, 1);
  std::vector<Event> ev;
  for (uint64_t i = 0; i < 11; ++i) {
    ev.push_back({false, 0, 1000 * i});
    ev.push_back({true, 0, 1000 * i + 10 + i});
  }
  b.add_cta(0, 0, {ev});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  EXPECT_EQ(r.wrapped_units, 1u);
  EXPECT_EQ(r.overwritten_events, 14u);
  ASSERT_EQ(r.samples.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.samples[i].start_cycle, 1000 * (7 + i));
    EXPECT_EQ(r.samples[i].end_cycle - r.samples[i].start_cycle, 10 + 7 + i);
  }
}

TEST(ScratchDecoder, WrapThatCutsARegionCountsTheOrphanEnd) {
  ScratchBuilder b(1, 32, 1);  // 4 events
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 2}, {false, 0, 3}, {true, 0, 4}, {false, 1, 5}}});
  // The cursor is at event 1: survivors are (end 0 @2), (start 0 @3), (end 0 @4), (start 1 @5).
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].start_cycle, 3u);
  EXPECT_EQ(r.unmatched_events, 2u);  // the orphan end and the unclosed start
}

TEST(ScratchDecoder, SelectedWarpsUseTheirOwnIndices) {
  ScratchBuilder b(8, 1024, 2);
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 5}}, {{false, 0, 1}, {true, 0, 9}}});
  // The builder wrote indices at slots 0 and 1; selected warps 0 and 1 read them.
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 8, {0, 1}));
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[1].unit, 1u);
  EXPECT_EQ(r.samples[1].end_cycle - r.samples[1].start_cycle, 8u);
}

TEST(ScratchDecoder, GroupLeadersPastTheLastWarpKeepEmptySegments) {
  // granularity=warp_group on an 8-warp kernel: compiled with warps 0,4,...,28 selected, so
  // the data is split into 8 segments; warps 0 and 4 (the two warpgroups' leaders) fill the
  // first two, the other six never run.
  ScratchBuilder b(8, 1024, 8);
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 5}}, {{false, 0, 1}, {true, 0, 9}}});
  uint8_t* cta = b.bytes().data();
  uint32_t words = 0;
  std::memcpy(&words, cta + kHeaderFixedBytes + 4, 4);  // the builder wrote slot 1: move it
  ScratchBuilder::put32(cta + kHeaderFixedBytes + 4, 0);
  ScratchBuilder::put32(cta + kHeaderFixedBytes + 4 * 4, words);
  KernelLayout layout = layout_of(b, 8, {0, 4});
  layout.segments = 8;
  DecodeResult r = decode_scratch(b.bytes(), layout);
  ASSERT_EQ(r.samples.size(), 2u) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.samples[1].unit, 4u);
  EXPECT_EQ(r.samples[1].end_cycle - r.samples[1].start_cycle, 8u);
  // Without the segment count the second leader would be read from the wrong place.
  layout.segments = 0;
  DecodeResult wrong = decode_scratch(b.bytes(), layout);
  EXPECT_TRUE(wrong.samples.size() != 2u ||
              wrong.samples[1].end_cycle - wrong.samples[1].start_cycle != 8u);
}

TEST(ScratchDecoder, ARegionLeftOpenInOneWarpNeverPairsWithTheNextWarpsEnd) {
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 0, {{{false, 3, 10}}, {{true, 3, 50}, {false, 1, 60}, {true, 1, 70}}});
  b.add_cta(1, 0, {{{true, 3, 90}}, {}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 2));
  ASSERT_EQ(r.samples.size(), 1u);  // only warp 1's scope 1
  EXPECT_EQ(r.samples[0].scope, 1u);
  EXPECT_EQ(r.unmatched_events, 3u);  // warp 0's open start, warp 1's and CTA 1's lone ends
}

TEST(ScratchDecoder, UnprofiledCtaIsSkippedQuietly) {
  ScratchBuilder b(1, 64, 1);
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 2}}}, 1000, 0);
  b.add_cta(1, 0, {{{false, 0, 1}, {true, 0, 2}}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  EXPECT_EQ(r.skipped_ctas, 1u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.samples.size(), 1u);
}

TEST(ScratchDecoder, CorruptCtaIsReportedAndTheRestKept) {
  ScratchBuilder b(1, 64, 1);
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 2}}});
  b.add_cta(1, 0, {{{false, 0, 1}, {true, 0, 2}}}, 1000, 0x12345678);
  b.add_cta(2, 0, {{{false, 0, 1}, {true, 0, 2}}});
  ScratchBuilder::put32(b.bytes().data() + 2 * b.slice_bytes() + 12, 1u << 30);  // data size
  b.add_cta(3, 0, {{{false, 0, 1}, {true, 0, 4}}});
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  EXPECT_EQ(r.corrupt_ctas, 2u);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].find("bad preamble"), std::string::npos);
  EXPECT_NE(r.errors[1].find("does not fit"), std::string::npos);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[1].cta, 3u);
}

// The decoder thread decodes every launch into one result: nothing of the launch before (its
// samples, counts, errors, CTAs) may show in the next.
TEST(ScratchDecoder, AReusedResultHoldsOnlyTheLastDecode) {
  ScratchBuilder bad(1, 32, 1);  // wraps, leaves an orphan end, and a corrupt CTA
  bad.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 2}, {false, 0, 3}, {true, 0, 4}, {false, 1, 5}}});
  bad.add_cta(1, 0, {{{false, 0, 1}, {true, 0, 2}}}, 1000, 0x12345678);
  ScratchBuilder good(1, 64, 1);
  good.add_cta(7, 3, {{{false, 0, 10}, {true, 0, 25}}});
  DecodeResult r;
  decode_scratch_into(bad.bytes(), layout_of(bad, 1), r);
  ASSERT_EQ(r.corrupt_ctas, 1u);
  ASSERT_GT(r.unmatched_events, 0u);
  decode_scratch_into(good.bytes(), layout_of(good, 1), r);
  DecodeResult fresh = decode_scratch(good.bytes(), layout_of(good, 1));
  EXPECT_EQ(r.wrapped_units, 0u);
  EXPECT_EQ(r.overwritten_events, 0u);
  EXPECT_EQ(r.unmatched_events, 0u);
  EXPECT_EQ(r.corrupt_ctas, 0u);
  EXPECT_EQ(r.regions, 1u);
  EXPECT_EQ(r.sums[0].count, 1u);  // not 2: the bad buffer closed one region of scope 0 too
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.ctas.size(), 1u);
  EXPECT_EQ(r.ctas[0].cta, 7u);
  ASSERT_EQ(r.samples.size(), fresh.samples.size());
  EXPECT_EQ(r.samples[0].cta, 7u);
  EXPECT_EQ(r.samples[0].end_cycle - r.samples[0].start_cycle, 15u);
}

// A tree-only session needs per-scope sums, not each region: the decoder then keeps no samples
// and sums exactly what the full decode's samples add up to.
TEST(ScratchDecoder, SumsOnlyDecodeAddsUpLikeTheSamples) {
  ScratchBuilder b(2, 256, 2);
  b.add_cta(0, 1,
            {{{false, 0, 10}, {false, 1, 20}, {true, 1, 25}, {true, 0, 110}},
             {{false, 0, 10}, {true, 0, 60}}});
  b.add_cta(1, 2, {{{false, 0, 10}, {true, 0, 20}, {true, 1, 30}}, {}});
  DecodeResult full = decode_scratch(b.bytes(), layout_of(b, 2));
  DecodeResult sums;
  decode_scratch_into(b.bytes(), layout_of(b, 2), sums, /*keep_samples=*/false);
  EXPECT_TRUE(sums.samples.empty());
  ASSERT_EQ(full.samples.size(), 4u);
  std::array<ScopeSum, 256> from_samples{};
  for (const RegionSample& s : full.samples) {
    from_samples[s.scope].cycles += s.end_cycle - s.start_cycle;
    ++from_samples[s.scope].count;
  }
  for (size_t id = 0; id < 256; ++id) {
    EXPECT_EQ(sums.sums[id].cycles, from_samples[id].cycles) << id;
    EXPECT_EQ(sums.sums[id].count, from_samples[id].count) << id;
    EXPECT_EQ(full.sums[id].cycles, from_samples[id].cycles) << id;
  }
  EXPECT_EQ(sums.sums[0].cycles, 100u + 50 + 10);
  EXPECT_EQ(sums.unmatched_events, full.unmatched_events);
  EXPECT_EQ(sums.regions, 4u);
  EXPECT_EQ(full.regions, 4u);
  EXPECT_EQ(sums.ctas.size(), 2u);
}

TEST(ScratchDecoder, TruncatedBufferKeepsWholeSlices) {
  ScratchBuilder b(1, 64, 1);
  b.add_cta(0, 0, {{{false, 0, 1}, {true, 0, 2}}});
  b.add_cta(1, 0, {{{false, 0, 1}, {true, 0, 2}}});
  b.bytes().resize(b.bytes().size() - 5);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("truncated"), std::string::npos);
  EXPECT_EQ(r.samples.size(), 1u);
}

TEST(ScratchDecoder, BadLayoutIsAnErrorNotACrash) {
  std::vector<uint8_t> bytes(100, 0xff);
  EXPECT_FALSE(decode_scratch(bytes, KernelLayout{4, 10, {}, 0}).errors.empty());
  EXPECT_FALSE(decode_scratch(bytes, KernelLayout{0, 100, {}, 0}).errors.empty());
  EXPECT_FALSE(decode_scratch(bytes, KernelLayout{2, 100, {5}, 0}).errors.empty());
}

TEST(ScratchDecoder, DataStartsAfterTheIndicesAsTritonLowersIt) {
  // Four warps: the data begins at byte 56 (Triton 3.6's LLVM IR), not at a 128-byte boundary.
  EXPECT_EQ(data_offset_for(KernelLayout{4, 8320, {}, 0}, 8192), 56u);
  EXPECT_EQ(data_offset_for(KernelLayout{4, 8320, {}, 128}, 8192), 128u);
}

// Async events (Triton 3.8+: pl.allocate_event / start_event / end_event) set bit 22 of the
// record's first word; the id is the event's, from the same numbering as region names.
Event async_start(uint32_t id, uint64_t clock) {
  return {false, id, clock, true};
}
Event async_end(uint32_t id, uint64_t clock) {
  return {true, id, clock, true};
}

TEST(ScratchDecoderAsync, ReadsTheWordsTriton39Writes) {
  // Triton 3.9's lowering of: e = allocate_event("copy"); enter_scope("r"); start_event(e);
  // ...; end_event(e); exit_scope("r") (read from its LLVM IR for sm_90): "copy" is id 0, "r"
  // id 1, and the first words are 0x00800000, 0x00400000, 0x80400000, 0x80800000.
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<Event>> ev(4);
  ev[0] = {{false, 1, 100}, async_start(0, 110), async_end(0, 410), {true, 1, 500}};
  b.add_cta(0, 0, ev);
  const uint8_t* seg = b.bytes().data() + kHeaderFixedBytes + 4 * 4;
  const uint32_t words[] = {0x00800000u, 0x00400000u, 0x80400000u, 0x80800000u};
  for (int i = 0; i < 4; ++i) {
    uint32_t w0;
    std::memcpy(&w0, seg + 8 * i, 4);
    EXPECT_EQ(w0, words[i]) << i;
  }
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 4));
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  EXPECT_EQ(r.unmatched_events, 0u);
  EXPECT_EQ(r.sums[1].cycles, 400u);  // the region
  EXPECT_EQ(r.sums[0].cycles, 300u);  // the event: not a region start (bit 22), not unmatched
  EXPECT_EQ(r.sums[0].count, 1u);
  EXPECT_EQ(r.async_events, 1u);
  EXPECT_EQ(r.cross_unit_events, 0u);
  EXPECT_EQ(r.regions, 2u);
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_FALSE(r.samples[0].async);
  EXPECT_EQ(r.samples[0].end_unit, 0u);
  EXPECT_TRUE(r.samples[1].async);
  EXPECT_EQ(r.samples[1].scope, 0u);
}

TEST(ScratchDecoderAsync, PairsAnEventStartedByOneWarpAndEndedByAnother) {
  // Warp 0 issues the copy (start, id 2), warp 1 waits for it (end): one event across warps,
  // while warp 1's own region (id 3) pairs as usual around it.
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<Event>> ev(4);
  ev[0] = {async_start(2, 100)};
  ev[1] = {{false, 3, 50}, async_end(2, 400), {true, 3, 450}};
  b.add_cta(0, 5, ev);
  b.add_cta(1, 6, ev, 9000);
  for (bool keep : {true, false}) {
    DecodeResult r;
    decode_scratch_into(b.bytes(), layout_of(b, 4), r, keep);
    ASSERT_TRUE(r.errors.empty()) << r.errors[0];
    EXPECT_EQ(r.unmatched_events, 0u);
    EXPECT_EQ(r.async_events, 2u);
    EXPECT_EQ(r.cross_unit_events, 2u);
    EXPECT_EQ(r.sums[2].cycles, 2 * 300u);
    EXPECT_EQ(r.sums[2].count, 2u);
    EXPECT_EQ(r.sums[2].ctas, 2u);
    EXPECT_EQ(r.sums[2].slowest_unit_cycles, 2 * 300u);
    EXPECT_EQ(r.sums[3].cycles, 2 * 400u);
    EXPECT_EQ(r.sums[3].units, 2u);
    if (!keep) continue;
    ASSERT_EQ(r.samples.size(), 4u);
    // Samples stay CTA by CTA (the timeline walks them with the headers).
    EXPECT_EQ(r.samples[0].cta, 0u);
    EXPECT_EQ(r.samples[1].cta, 0u);
    EXPECT_EQ(r.samples[2].cta, 1u);
    const RegionSample& e = r.samples[1];
    EXPECT_TRUE(e.async);
    EXPECT_EQ(e.unit, 0u);
    EXPECT_EQ(e.end_unit, 1u);
    EXPECT_EQ(e.sm, 5u);
    EXPECT_EQ(e.start_cycle, 100u);
    EXPECT_EQ(e.end_cycle, 400u);
    EXPECT_EQ(r.ctas[0].first_clock, 50u);
  }
}

TEST(ScratchDecoderAsync, PairsInClockOrderAcrossWarpsLikeAPipelinedLoop) {
  // Each iteration: warp 0 starts the copy, warp 1 ends it; the records of one warp's segment
  // are not in the order the other warp's are, only the clock orders them.
  ScratchBuilder b(2, 4096, 2);
  std::vector<std::vector<Event>> ev(2);
  ev[0] = {async_start(0, 100), async_start(0, 300), async_start(0, 600)};
  ev[1] = {async_end(0, 200), async_end(0, 450), async_end(0, 700)};
  b.add_cta(0, 0, ev);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 2));
  EXPECT_EQ(r.unmatched_events, 0u);
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(r.samples[0].end_cycle - r.samples[0].start_cycle, 100u);
  EXPECT_EQ(r.samples[1].end_cycle - r.samples[1].start_cycle, 150u);
  EXPECT_EQ(r.samples[2].start_cycle, 600u);
  EXPECT_EQ(r.sums[0].cycles, 350u);
}

TEST(ScratchDecoderAsync, EveryWarpThatStartsAndEndsItsOwnEventPairsWithItself) {
  // A plain Triton kernel: every warp records the event's start and end, at nearly the same
  // clocks; in clock order across the CTA they interleave, but each warp's pair is its own.
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<Event>> ev(4);
  for (uint32_t w = 0; w < 4; ++w)
    ev[w] = {async_start(0, 100 + w), async_end(0, 200 + 10 * w)};
  b.add_cta(0, 0, ev);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 4));
  EXPECT_EQ(r.unmatched_events, 0u);
  EXPECT_EQ(r.async_events, 4u);
  EXPECT_EQ(r.cross_unit_events, 0u);
  ASSERT_EQ(r.samples.size(), 4u);
  for (uint32_t w = 0; w < 4; ++w) {
    EXPECT_EQ(r.samples[w].unit, w);
    EXPECT_EQ(r.samples[w].end_unit, w);
    EXPECT_EQ(r.samples[w].end_cycle - r.samples[w].start_cycle, 100u + 9 * w);
  }
}

TEST(ScratchDecoderAsync, AProducerWarpgroupsStartsPairWithAConsumerWarpgroupsEndsInOrder) {
  // Warps 0-3 (the producer partition) each issue a copy; warps 4-7 (the consumer) wait: the
  // oldest open start pairs with each end, so all four pair, none is unmatched.
  ScratchBuilder b(8, 8192, 8);
  std::vector<std::vector<Event>> ev(8);
  for (uint32_t w = 0; w < 4; ++w) {
    ev[w] = {async_start(3, 100 + w)};
    ev[4 + w] = {async_end(3, 500 + w)};
  }
  b.add_cta(0, 0, ev);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 8));
  EXPECT_EQ(r.unmatched_events, 0u);
  EXPECT_EQ(r.async_events, 4u);
  EXPECT_EQ(r.cross_unit_events, 4u);
  EXPECT_EQ(r.sums[3].cycles, 4 * 400u);
  ASSERT_EQ(r.samples.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.samples[i].unit, i);
    EXPECT_EQ(r.samples[i].end_unit, 4 + i);
  }
}

TEST(ScratchDecoderAsync, CountsUnmatchedEndsAndStartsWithoutLosingThePairs) {
  ScratchBuilder b(2, 4096, 2);
  std::vector<std::vector<Event>> ev(2);
  // id 4: an end with no start (its start lost or never recorded), then a pair.
  // id 5: two starts and one end (on another warp): the oldest start pairs, the newer is
  // unmatched.
  // id 6: a start never ended.
  ev[0] = {async_end(4, 10), async_start(4, 20), async_start(5, 30), async_start(5, 40),
           async_start(6, 45)};
  ev[1] = {async_end(4, 120), async_end(5, 140)};
  b.add_cta(0, 0, ev);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 2));
  EXPECT_EQ(r.unmatched_async, 3u);
  EXPECT_EQ(r.unmatched_events, 3u);
  EXPECT_EQ(r.async_events, 2u);
  EXPECT_EQ(r.sums[4].cycles, 100u);
  EXPECT_EQ(r.sums[5].cycles, 110u);  // the oldest start
  EXPECT_EQ(r.sums[6].count, 0u);
}

TEST(ScratchDecoderAsync, AnEventIsNotARegionAndARegionIsNotAnEvent) {
  // A region end must not close an async start of the same id, nor an async end a region.
  ScratchBuilder b(1, 1024, 1);
  std::vector<std::vector<Event>> ev(1);
  ev[0] = {{false, 7, 0}, async_end(7, 10), async_start(7, 20), {true, 7, 30}};
  b.add_cta(0, 0, ev);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 1));
  EXPECT_EQ(r.async_events, 0u);
  EXPECT_EQ(r.sums[7].count, 1u);  // the region only
  EXPECT_EQ(r.sums[7].cycles, 30u);
  EXPECT_EQ(r.unmatched_async, 2u);
}

TEST(ScratchDecoderAsync, HighIdEventsDoNotCountAsAWarpOfALaterCtasRegions) {
  // Event id 70 in CTA 0; in CTA 1 a region of id 80 makes the segment pairing scan ids past 63:
  // the event's sums must not be read as a unit of CTA 1.
  ScratchBuilder b(2, 4096, 2);
  std::vector<std::vector<Event>> ev0(2), ev1(2);
  ev0[0] = {async_start(70, 0)};
  ev0[1] = {async_end(70, 90)};
  ev1[0] = {{false, 80, 0}, {true, 80, 10}};
  b.add_cta(0, 0, ev0);
  b.add_cta(1, 0, ev1);
  DecodeResult r = decode_scratch(b.bytes(), layout_of(b, 2));
  EXPECT_EQ(r.sums[70].units, 1u);
  EXPECT_EQ(r.sums[70].ctas, 1u);
  EXPECT_EQ(r.sums[70].slowest_unit_cycles, 90u);
  EXPECT_EQ(r.sums[80].units, 1u);
  EXPECT_EQ(r.sums[80].ctas, 1u);
}

}  // namespace
}  // namespace proton::instr
