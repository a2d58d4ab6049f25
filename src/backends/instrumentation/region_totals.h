// From decoded samples to the call tree's region totals and trace spans. Vendor-neutral; the
// sessions receive them through a RegionSink they install (session/region_sink.h).
#pragma once

#include <vector>

#include "backends/instrumentation/instr_runtime.h"
#include "data/region_metrics.h"

namespace proton::instr {

/// Sums the samples of one launch per scope id, each with its path of enclosing regions
/// (outermost first). Scope ids the kernel did not name become "scope_<id>".
std::vector<RegionTotals> region_totals(const KernelInfo& kernel, const DecodeResult& decoded);

/// Each sample placed in global-timer ns: its CTA's init time plus its clock offset from the
/// CTA's first recorded clock, at `clock_khz`. Empty when the clock is unknown (0). With
/// `extent`, widens it to hold every span (in the same pass: a dense launch has 65,536).
std::vector<RegionSpan> region_spans(const KernelInfo& kernel, const DecodeResult& decoded,
                                     uint32_t clock_khz, LaunchSpan* extent = nullptr);

/// The launch's extent in global-timer ns from its CTA headers: the earliest CTA start to the
/// latest CTA end. {0, 0} when no header was written whole.
LaunchSpan launch_span(const DecodeResult& decoded);

}  // namespace proton::instr
