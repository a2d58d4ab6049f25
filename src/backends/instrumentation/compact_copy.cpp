#include "backends/instrumentation/compact_copy.h"

#include <algorithm>
#include <cstring>

namespace proton::instr {

namespace {

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void write_u32(uint8_t* p, uint32_t v) {
  std::memcpy(p, &v, sizeof v);
}

// The data size of a row that the plan can trust: a profiled row whose segments fit its slice.
bool usable_row(const SliceRun& run, const uint8_t* h, uint32_t& data_bytes) {
  if (read_u32(h) != kPreamble) return false;
  data_bytes = read_u32(h + 12);
  if (data_bytes == 0 || run.units == 0 || run.segments < run.units ||
      run.data_offset > run.slice || data_bytes > run.slice - run.data_offset)
    return false;
  return data_bytes / run.segments >= kEventBytes;
}

}  // namespace

SliceRun slice_run(const KernelLayout& layout, uint64_t device, uint64_t rows) {
  SliceRun run;
  run.device = device;
  run.rows = rows;
  run.slice = layout.scratch_bytes;
  run.header = kHeaderFixedBytes + 4 * layout.num_warps;
  run.data_offset = data_offset_for(layout, 0);
  run.units = static_cast<uint32_t>(profiled_units(layout).size());
  run.segments = segment_count(layout, run.units);
  return run;
}

void plan_unit_bytes(SliceRun& run, std::span<const uint8_t> headers,
                     std::span<const uint32_t> units) {
  run.segment = 0;
  run.unit_bytes = 0;
  run.data_bytes = 0;
  const uint64_t rows = std::min<uint64_t>(run.rows, headers.size() / std::max(run.header, 1u));
  for (uint64_t r = 0; r < rows; ++r) {
    const uint8_t* h = headers.data() + r * run.header;
    uint32_t data_bytes = 0;
    if (!usable_row(run, h, data_bytes)) continue;
    if (run.data_bytes == 0) {
      run.data_bytes = data_bytes;
      run.segment = data_bytes / run.segments;
    }
    if (data_bytes != run.data_bytes) continue;  // reported by write_compact_headers
    for (uint32_t unit : units) {
      const size_t at = kHeaderFixedBytes + 4 * size_t{unit};
      if (at + 4 > run.header) continue;
      uint64_t bytes = uint64_t{read_u32(h + at)} * 4;
      bytes = (bytes + kEventBytes - 1) / kEventBytes * kEventBytes;
      run.unit_bytes = static_cast<uint32_t>(
          std::max<uint64_t>(run.unit_bytes, std::min<uint64_t>(bytes, run.segment)));
    }
  }
  // At least one event per segment: the decoder refuses a segment smaller than an event.
  if (run.data_bytes != 0) run.unit_bytes = std::max(run.unit_bytes, kEventBytes);
}

void write_compact_headers(const SliceRun& run, std::span<const uint8_t> headers,
                           std::span<uint8_t> out) {
  const uint32_t row_bytes = run.compact_bytes();
  const uint64_t rows = std::min<uint64_t>(
      {run.rows, headers.size() / std::max(run.header, 1u), out.size() / std::max(row_bytes, 1u)});
  for (uint64_t r = 0; r < rows; ++r) {
    const uint8_t* h = headers.data() + r * run.header;
    uint8_t* o = out.data() + r * row_bytes;
    std::memcpy(o, h, run.header);
    uint32_t data_bytes = 0;
    if (!usable_row(run, h, data_bytes)) continue;  // the decoder says what is wrong with it
    if (data_bytes != run.data_bytes) {
      write_u32(o, kMismatchedRowPreamble);
      continue;
    }
    write_u32(o + 12, run.units * run.unit_bytes);
  }
}

KernelLayout compact_layout(const KernelLayout& device_layout, const SliceRun& run) {
  KernelLayout k = device_layout;
  k.scratch_bytes = run.compact_bytes();
  k.data_offset = run.header;
  k.segments = 0;
  return k;
}

}  // namespace proton::instr
