// libFuzzer target: any bytes as a kernel's profile scratch, through the decoder and the steps
// after it (region totals, timeline spans). The first 4 bytes pick the layout (warps, data size,
// selected warps), the rest is the buffer. Sanitizers catch anything but a clean result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include <cstring>
#include <vector>

#include "backends/instrumentation/compact_copy.h"
#include "backends/instrumentation/region_totals.h"
#include "backends/instrumentation/scratch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton::instr;
  if (size < 4) return 0;
  KernelLayout layout;
  layout.num_warps = 1u << (data[0] % 6);            // 1..32 warps
  const uint32_t data_bytes = 8u << (data[1] % 12);  // 8 B .. 16 KB
  layout.scratch_bytes = 40 + 4 * layout.num_warps + data_bytes + (data[2] % 3) * 8;
  for (uint32_t w = 0; w < layout.num_warps && w < 8; ++w)  // selected warps from a mask
    if (data[3] & (1u << w)) layout.units.push_back(w);
  DecodeResult r = decode_scratch(std::span<const uint8_t>(data + 4, size - 4), layout);
  KernelInfo k;
  k.layout = layout;
  k.scope_parents.assign(256, -1);
  k.scope_parents[1] = 0;
  k.scope_parents[0] = 1;  // a cycle in bad metadata must not loop
  (void)region_totals(k, r);
  // The launch's box holds every region placed on the timeline, whatever the headers say.
  proton::LaunchSpan box = launch_span(r);
  for (const proton::RegionSpan& s : region_spans(k, r, 1980000, &box))
    if (s.start_ns < box.start_ns || s.end_ns > box.end_ns) abort();
  // The tree-only decode (no samples kept) must sum exactly what the full one does.
  static DecodeResult sums_only;
  decode_scratch_into(std::span<const uint8_t>(data + 4, size - 4), layout, sums_only, false);
  if (!sums_only.samples.empty() || sums_only.unmatched_events != r.unmatched_events) abort();
  // Async events (the record word's bit 22): pairs are regions too, counted the same both ways.
  if (sums_only.async_events != r.async_events || r.cross_unit_events > r.async_events ||
      r.unmatched_async > r.unmatched_events || r.async_events > r.regions)
    abort();
  size_t async_samples = 0;
  for (const RegionSample& s : r.samples)
    async_samples += s.async ? 1 : 0;
  if (async_samples != r.async_events || r.samples.size() != r.regions) abort();
  for (size_t id = 0; id < r.sums.size(); ++id)
    if (sums_only.sums[id].cycles != r.sums[id].cycles ||
        sums_only.sums[id].count != r.sums[id].count)
      abort();
  // The same bytes through the runtime's compact copy-back (compact_copy.h), done on the host:
  // headers read, plan made from them, compact rows built and decoded.
  std::span<const uint8_t> rows(data + 4, size - 4);
  std::vector<uint32_t> units = profiled_units(layout);
  SliceRun run = slice_run(layout, 0, rows.size() / layout.scratch_bytes);
  std::vector<uint8_t> headers(run.rows * run.header);
  for (uint64_t i = 0; i < run.rows; ++i)
    std::memcpy(headers.data() + i * run.header, rows.data() + i * run.slice, run.header);
  plan_unit_bytes(run, headers, units);
  std::vector<uint8_t> compact(run.rows * run.compact_bytes());
  write_compact_headers(run, headers, compact);
  for (uint64_t i = 0; i < run.rows; ++i)
    for (uint32_t u = 0; u < run.units; ++u)
      if (run.unit_bytes != 0 && run.data_offset + (u + 1) * uint64_t{run.segment} <= run.slice)
        std::memcpy(compact.data() + i * run.compact_bytes() + run.header + u * run.unit_bytes,
                    rows.data() + i * run.slice + run.data_offset + u * run.segment,
                    run.unit_bytes);
  (void)decode_scratch(compact, compact_layout(layout, run));
  return 0;
}
