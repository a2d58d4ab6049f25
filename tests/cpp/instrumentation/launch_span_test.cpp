// A launch's extent from its decoded CTA headers and regions: the kernel's box on the timeline
// when no kernel record comes (an instrumentation session without them, the default).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "backends/instrumentation/region_totals.h"

namespace proton::instr {
namespace {

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

}  // namespace
}  // namespace proton::instr
