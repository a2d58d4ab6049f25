// A launch's extent from its decoded CTA headers and regions: the kernel's box on the timeline
// when no kernel record comes (an instrumentation session without them, the default).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "backends/instrumentation/region_totals.h"
#include "common/name_table.h"
#include "scratch_builder.h"

namespace proton::instr {
namespace {

using testing::ScratchBuilder;

CtaHeader cta(uint64_t init, uint64_t post_final) {
  CtaHeader h;
  h.init_ns = init;
  h.pre_final_ns = post_final;
  h.post_final_ns = post_final;
  h.first_clock = 100;  // the samples' first clock: they start at init_ns
  return h;
}

using Extent = std::pair<uint64_t, uint64_t>;  // {start, end}

/// The extent of a launch of these CTAs and, placed at 1 GHz, their regions' samples.
Extent extent(std::vector<CtaHeader> ctas, std::vector<RegionSample> samples = {}) {
  DecodeResult d;
  d.ctas = std::move(ctas);
  d.samples = std::move(samples);
  LaunchSpan s = launch_span(d);
  KernelInfo k;
  (void)region_spans(k, d, 1000000, &s);
  return {s.start_ns, s.end_ns};
}

TEST(LaunchSpan, FirstCtaStartToLastCtaEnd) {
  EXPECT_EQ(extent({cta(5000, 9000), cta(4000, 7000), cta(6000, 12000)}), Extent(4000, 12000));
}

TEST(LaunchSpan, RegionsPlacedByTheirClockStayInside) {
  // A region's end is its start plus cycles at the SM clock: it may pass the CTA's last timer
  // read by a little (here 3,200 cycles from its first clock: 7,200 ns), and the box must
  // still hold it.
  EXPECT_EQ(extent({cta(4000, 7000)}, {{0, 1, 0, 0, 100, 3300}}), Extent(4000, 7200));
}

TEST(LaunchSpan, HeadersNotWrittenWholeAreLeftOutAndNothingGivesNoBox) {
  EXPECT_EQ(extent({cta(0, 9000), cta(8000, 100), cta(5000, 6000)}), Extent(5000, 6000));
  EXPECT_EQ(extent({cta(0, 9000)}), Extent(0, 0));
}

TEST(RegionSpans, CarryTheirClockAndTheirCtasFinalizationTime) {
  // What the trace writes as Triton's "Frequency (MHz)" and "Finalization Time (ns)".
  DecodeResult d;
  CtaHeader h = cta(4000, 7000);
  h.pre_final_ns = 6400;
  d.ctas = {h};
  d.samples = {{0, 1, 0, 0, 100, 300}};
  KernelInfo k;
  std::vector<RegionSpan> spans = region_spans(k, d, 1755000);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].clock_mhz, 1755u);
  EXPECT_EQ(spans[0].finalize_ns, 600u);
}

TEST(RegionSpans, AnAsyncEventIsANodeOfTheTreeAndASpanThatSaysWhichWarpEndedIt) {
  // Warp 0 starts event "tma" (id 0) inside region "loop" (id 1), warp 2 ends it.
  ScratchBuilder b(4, 8192, 4);
  std::vector<std::vector<testing::Event>> ev(4);
  ev[0] = {{false, 1, 100}, {false, 0, 120, true}, {true, 1, 200}};
  ev[2] = {{true, 0, 420, true}};
  b.add_cta(0, 3, ev);
  DecodeResult d = decode_scratch(b.bytes(), KernelLayout{4, b.slice_bytes(), {}, 0});
  KernelInfo k;
  k.scope_names = {NameTable::global().intern("tma"), NameTable::global().intern("loop")};
  k.scope_parents = {1, -1};  // the event was started inside the region
  std::vector<RegionTotals> totals = region_totals(k, d);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(NameTable::global().name(totals[0].path.back()), "tma");
  EXPECT_EQ(totals[0].path.size(), 2u);
  EXPECT_EQ(totals[0].cycles, 300u);
  EXPECT_EQ(totals[0].count, 1u);
  std::vector<RegionSpan> spans = region_spans(k, d, 1000000);  // 1 GHz: 1 cycle = 1 ns
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_FALSE(spans[0].async);
  EXPECT_EQ(spans[0].end_warp, spans[0].warp);
  EXPECT_TRUE(spans[1].async);
  EXPECT_EQ(spans[1].warp, 0u);
  EXPECT_EQ(spans[1].end_warp, 2u);
  EXPECT_EQ(spans[1].end_ns - spans[1].start_ns, 300u);
  EXPECT_EQ(spans[1].start_ns - spans[0].start_ns, 20u);
}

}  // namespace
}  // namespace proton::instr
