// A launch's extent from its decoded CTA headers and regions: the kernel's box on the timeline
// when no kernel record comes (PROTON_INSTR_KERNEL_TIME=0).
#include <gtest/gtest.h>

#include <vector>

#include "backends/instrumentation/region_totals.h"

namespace proton::instr {
namespace {

CtaHeader cta(uint64_t init, uint64_t post_final) {
  CtaHeader h;
  h.init_ns = init;
  h.pre_final_ns = post_final;
  h.post_final_ns = post_final;
  return h;
}

TEST(LaunchSpan, FirstCtaStartToLastCtaEnd) {
  DecodeResult d;
  d.ctas = {cta(5000, 9000), cta(4000, 7000), cta(6000, 12000)};
  LaunchSpan s = launch_span(d, {});
  EXPECT_EQ(s.start_ns, 4000u);
  EXPECT_EQ(s.end_ns, 12000u);
}

TEST(LaunchSpan, RegionsPlacedByTheirClockStayInside) {
  // A region's end is its start plus cycles at the SM clock: it may pass the CTA's last timer
  // read by a little, and the box must still hold it.
  DecodeResult d;
  d.ctas = {cta(4000, 7000)};
  std::vector<RegionSpan> spans{{0, 1, 0, 0, 4000, 7200}};
  LaunchSpan s = launch_span(d, spans);
  EXPECT_EQ(s.start_ns, 4000u);
  EXPECT_EQ(s.end_ns, 7200u);
}

TEST(LaunchSpan, HeadersNotWrittenWholeAreLeftOutAndNothingGivesNoBox) {
  DecodeResult d;
  d.ctas = {cta(0, 9000), cta(8000, 100), cta(5000, 6000)};
  LaunchSpan s = launch_span(d, {});
  EXPECT_EQ(s.start_ns, 5000u);
  EXPECT_EQ(s.end_ns, 6000u);
  d.ctas = {cta(0, 9000)};
  s = launch_span(d, {});
  EXPECT_EQ(s.start_ns, 0u);
  EXPECT_EQ(s.end_ns, 0u);
}

}  // namespace
}  // namespace proton::instr
