// Copy-back of only what the warps wrote. A launch's profile scratch is one slice per CTA, each
// mostly empty segments (on the H100, a 132-CTA kernel with one region per warp wrote 16 bytes
// into each 2 KB segment: 1.1 MB per launch to copy whole, 16 KB of it used). So the consumer
// copies in two rounds of strided (2D) copies over runs of contiguous CTA slices:
//   1. the headers (fixed part + per-warp word counts), one row per CTA;
//   2. per profiled unit, the first `unit_bytes` of its segment in every row, where unit_bytes
//      is the most any unit of the run wrote (a whole segment if one wrapped),
// into a compact host layout that the decoder reads as an ordinary scratch whose slice is
// `compact_bytes` and whose data starts right after the header. Vendor-neutral: plans and host
// bytes only; the runtime issues the copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/instrumentation/scratch_decoder.h"

namespace proton::instr {

/// Contiguous CTA slices of one kernel in device memory (one or several launches in a row).
struct SliceRun {
  uint64_t device = 0;       // the first row's device address
  uint64_t rows = 0;         // CTA slices
  uint32_t slice = 0;        // device bytes per row
  uint32_t header = 0;       // fixed header + per-warp indices
  uint32_t data_offset = 0;  // where the segments start in a device row
  uint32_t units = 0;        // profiled units (the first `units` segments of a row)
  uint32_t segments = 0;     // segments per device row (>= units; see KernelLayout::segments)
  size_t header_at = 0;      // byte offset of the run's headers in the header staging
  // Set by plan_unit_bytes():
  uint32_t segment = 0;     // device bytes per segment (data bytes / units)
  uint32_t unit_bytes = 0;  // bytes copied per segment (0: nothing was written)
  uint32_t data_bytes = 0;  // the rows' data size on the device (all rows of a kernel agree)
  size_t data_at = 0;       // byte offset of the run's compact rows in the data staging

  uint32_t compact_bytes() const { return header + units * unit_bytes; }
};

/// The run of `rows` CTA slices of a kernel of `layout` at `device` (the plan's fields unset).
SliceRun slice_run(const KernelLayout& layout, uint64_t device, uint64_t rows);

/// Reads the run's copied headers (`headers`: rows x run.header bytes) and sets segment,
/// data_bytes and unit_bytes: the largest number of bytes any profiled unit of any valid row
/// wrote, rounded up to whole events, capped at the segment (a wrapped unit needs all of it).
/// Rows with a bad preamble or a data size that does not fit are left for the decoder to
/// report; they do not change the plan.
void plan_unit_bytes(SliceRun& run, std::span<const uint8_t> headers,
                     std::span<const uint32_t> units);

/// Writes the compact rows' headers into `out` (rows x run.compact_bytes()): each row's header
/// as copied, with its data size rewritten to units x unit_bytes. A valid-looking row whose
/// data size differs from the run's is marked corrupt (its preamble rewritten) so the decoder
/// skips and reports it instead of reading segments that were not copied.
void write_compact_headers(const SliceRun& run, std::span<const uint8_t> headers,
                           std::span<uint8_t> out);

/// The layout the decoder reads compact rows with.
/// (Compact rows hold one segment per profiled unit: their layout's `segments` is 0.)
KernelLayout compact_layout(const KernelLayout& device_layout, const SliceRun& run);

}  // namespace proton::instr
