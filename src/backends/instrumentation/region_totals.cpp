#include "backends/instrumentation/region_totals.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/name_table.h"

namespace proton::instr {

namespace {

NameId scope_name(const KernelInfo& k, uint32_t id) {
  if (id < k.scope_names.size() && k.scope_names[id] != kNoName) return k.scope_names[id];
  return NameTable::global().intern("scope_" + std::to_string(id));
}

}  // namespace

std::vector<RegionTotals> region_totals(const KernelInfo& k, const DecodeResult& d) {
  // The decoder sums each scope as it pairs (DecodeResult::sums): no pass over the samples.
  const auto& by_scope = d.sums;
  std::vector<RegionTotals> out;
  for (uint32_t id = 0; id < by_scope.size(); ++id) {
    if (by_scope[id].count == 0) continue;
    RegionTotals t;
    t.cycles = by_scope[id].cycles;
    t.count = by_scope[id].count;
    t.units = by_scope[id].units;
    t.ctas = by_scope[id].ctas;
    t.slowest_unit_cycles = by_scope[id].slowest_unit_cycles;
    // Walk up the parents; a cycle in bad metadata stops at 256 steps.
    uint32_t cur = id;
    for (int steps = 0; steps < 256; ++steps) {
      t.path.push_back(scope_name(k, cur));
      int32_t parent = cur < k.scope_parents.size() ? k.scope_parents[cur] : -1;
      if (parent < 0 || static_cast<uint32_t>(parent) == cur) break;
      cur = static_cast<uint32_t>(parent);
    }
    std::reverse(t.path.begin(), t.path.end());
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<RegionSpan> region_spans(const KernelInfo& k, const DecodeResult& d, uint32_t clock_khz,
                                     LaunchSpan* extent) {
  std::vector<RegionSpan> spans;
  if (clock_khz == 0 || d.ctas.empty()) return spans;
  // A region's end is its start plus cycles at the SM clock: it may pass its CTA's last timer
  // read by a little, and the launch's box must still hold it.
  uint64_t first = UINT64_MAX, last = 0;  // of the spans placed (any, once spans has one)
  spans.reserve(d.samples.size());
  const double ns_per_cycle = 1e6 / clock_khz;
  size_t c = 0;  // samples come CTA by CTA, in the order of d.ctas
  for (const RegionSample& s : d.samples) {
    while (c + 1 < d.ctas.size() && d.ctas[c].cta != s.cta)
      ++c;
    const CtaHeader& h = d.ctas[c];
    RegionSpan r;
    r.name = scope_name(k, s.scope);
    r.sm = s.sm;
    r.cta = s.cta;
    r.warp = s.unit;
    r.end_warp = s.async ? s.end_unit : s.unit;
    r.async = s.async;
    r.group_warps = k.group_warps;
    r.clock_mhz = clock_khz / 1000;
    if (h.post_final_ns > h.pre_final_ns) {
      r.finalize_ns =
          static_cast<uint32_t>(std::min<uint64_t>(h.post_final_ns - h.pre_final_ns, UINT32_MAX));
    }
    r.start_ns = h.init_ns + static_cast<uint64_t>(
                                 static_cast<double>(s.start_cycle - h.first_clock) * ns_per_cycle);
    r.end_ns = r.start_ns + static_cast<uint64_t>(static_cast<double>(s.end_cycle - s.start_cycle) *
                                                  ns_per_cycle);
    first = std::min(first, r.start_ns);
    last = std::max(last, r.end_ns);
    spans.push_back(r);
  }
  if (extent != nullptr && !spans.empty()) {
    if (extent->end_ns <= extent->start_ns) *extent = LaunchSpan{first, last};
    extent->start_ns = std::min(extent->start_ns, first);
    extent->end_ns = std::max(extent->end_ns, last);
  }
  return spans;
}

LaunchSpan launch_span(const DecodeResult& d) {
  uint64_t start = UINT64_MAX, end = 0;
  for (const CtaHeader& h : d.ctas) {
    if (h.init_ns == 0 || h.post_final_ns < h.init_ns) continue;  // a header not written whole
    start = std::min(start, h.init_ns);
    end = std::max(end, h.post_final_ns);
  }
  return start < end ? LaunchSpan{start, end} : LaunchSpan{};
}

}  // namespace proton::instr
