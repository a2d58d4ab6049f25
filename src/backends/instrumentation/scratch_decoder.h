// Decoding of the per-CTA profile scratch that Triton's instrumentation lowering writes
// (third_party/proton: convert-proton-nvidia-gpu-to-llvm and its host parser), and that
// include/proton/instrument.cuh writes for hand-written CUDA kernels. Vendor-neutral: bytes in,
// region samples out; no GPU, no driver.
//
// One CTA's slice of `scratch_bytes`:
//   u32 preamble 0xdeadbeef (0: the CTA was not profiled), u32 linear program id, u32 SM id,
//   u32 data bytes, u64 global time at init, u64 before the final copy, u64 after it,
//   one u32 per warp of the kernel: words (4 bytes) written into its segment,
//   then (at byte 40 + 4 * warps) the data: equal segments, one per profiled unit, in unit order.
// Each event is 8 bytes: word0 bit 31 end flag, bits 30..23 scope id, bit 22 the async flag,
// bits 10..0 the clock's high bits; word1 the clock's low 32 bits. A full segment wraps: the
// oldest events are overwritten, and the unit's index keeps counting.
//
// The async flag marks the records of `pl.start_event` / `pl.end_event` (Triton 3.8+): the id is
// then the event's (allocated from the same numbering as region names), and start and end may
// sit in different warps' segments (a copy issued by a producer warp, waited on by a consumer).
// Such records pair within their unit first, then per CTA across its units in clock order.
// Triton 3.6's lowering never sets bit 22 (its bits 22..11 are always zero), so one decoder reads
// both layouts: no version field is needed (the host header's version stayed 1 when the flag came).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace proton::instr {

inline constexpr uint32_t kPreamble = 0xdeadbeefu;
inline constexpr uint32_t kHeaderFixedBytes = 40;
inline constexpr uint32_t kEventBytes = 8;        // one event: two 32-bit words
inline constexpr uint32_t kAsyncFlag = 1u << 22;  // word0: an async event's start or end
/// Not written by any kernel: the copy-back marks a CTA whose data size differs from the other
/// CTAs of its launch with it (compact_copy.h), so the decoder reports it instead of guessing.
inline constexpr uint32_t kMismatchedRowPreamble = 0x0badda7au;

/// What the decoder must know about the kernel (from its compile metadata).
struct KernelLayout {
  uint32_t num_warps = 0;       // entries in the per-warp index array
  uint32_t scratch_bytes = 0;   // bytes per CTA (metadata.profile_scratch_size)
  std::vector<uint32_t> units;  // profiled warp ids, ascending; empty = every warp
  uint32_t data_offset = 0;     // where the data starts in a CTA's slice; 0 = after indices
  /// Equal segments the data is split into; 0 = one per profiled unit. More when the kernel
  /// was compiled with selected warps past its last one (a granularity's group leaders up to
  /// 32 warps): their segments come last, since ids are ascending, and stay empty.
  uint32_t segments = 0;
};

/// The profiled unit ids of a layout, ascending and unique (every warp when none are named),
/// in the order their segments sit in a row.
std::vector<uint32_t> profiled_units(const KernelLayout& layout);

/// The number of equal segments a CTA's data is split into.
inline uint32_t segment_count(const KernelLayout& layout, size_t units) {
  return layout.segments != 0 ? layout.segments : static_cast<uint32_t>(units);
}

/// One closed region on one unit (warp) of one CTA.
struct RegionSample {
  uint32_t cta = 0;
  uint32_t sm = 0;
  uint32_t unit = 0;
  uint32_t scope = 0;
  uint64_t start_cycle = 0;
  uint64_t end_cycle = 0;
  /// The unit that recorded the end: `unit` for a region; for an async event, the warp that
  /// ended it (another than the one that started it when the event crossed warps).
  uint32_t end_unit = 0;
  bool async = false;  // an async event's start-to-end, not a region
};

/// One async record of a CTA, kept until the CTA's segments are all read (decoder scratch).
struct AsyncEndpoint {
  uint64_t clock = 0;
  uint32_t unit = 0;
  uint32_t next = 0;  // the next open start of its id (the pairing's queue)
  uint8_t id = 0;
  bool end = false;
  bool paired = false;
};

/// One profiled CTA's header: its global-timer values place its samples in real time.
struct CtaHeader {
  uint32_t cta = 0;
  uint32_t sm = 0;
  uint64_t init_ns = 0;
  uint64_t pre_final_ns = 0;
  uint64_t post_final_ns = 0;
  uint64_t first_clock = 0;  // smallest start clock of its samples (aligns clock to init_ns)
};

/// Cycles and count of one scope's regions, summed over a launch's units; and how evenly the
/// units of a CTA share them: `units` and `ctas` that ran the scope, and, summed over those
/// CTAs, the cycles of each CTA's slowest unit (the CTA waits for it: a warp-specialized
/// kernel's critical path).
struct ScopeSum {
  uint64_t cycles = 0;
  uint64_t count = 0;
  uint64_t units = 0;
  uint64_t ctas = 0;
  uint64_t slowest_unit_cycles = 0;
};

struct DecodeResult {
  std::vector<CtaHeader> ctas;
  /// Every closed region, when asked for (the timeline needs them; the call tree only `sums`).
  std::vector<RegionSample> samples;
  std::array<ScopeSum, 256> sums{};  // by scope id (8 bits), always
  uint64_t regions = 0;              // closed regions (samples, whether kept or not)
  uint64_t wrapped_units = 0;        // segments that wrapped (oldest events lost)
  uint64_t overwritten_events = 0;   // events lost to wrap-around
  uint64_t unmatched_events = 0;     // an end without its start or a start without its end
  uint64_t async_events = 0;         // async start-to-end pairs (also in `regions` and `sums`)
  uint64_t cross_unit_events = 0;    // those started by one unit and ended by another
  uint64_t unmatched_async = 0;      // of `unmatched_events`, the async ones
  uint64_t skipped_ctas = 0;         // preamble 0: not profiled
  uint64_t corrupt_ctas = 0;         // bad preamble or sizes: skipped, the rest kept
  /// Clear errors, first few only (position and reason); decoding went on past each.
  std::vector<std::string> errors;
  /// Decoder scratch: one CTA's async records (kept here so its capacity is reused).
  std::vector<AsyncEndpoint> async_scratch;
};

/// Where the data starts when `layout` does not say: right after the per-warp indices.
uint32_t data_offset_for(const KernelLayout& layout, uint32_t data_bytes);

/// Decodes every CTA slice in `bytes`. Never throws on bad input: problems are counted and
/// described in `errors`; whatever decodes is kept.
DecodeResult decode_scratch(std::span<const uint8_t> bytes, const KernelLayout& layout);

/// The same into `out`, which is cleared first and keeps its capacity: the decoder thread
/// decodes every launch into one result (a fresh one per launch cost an allocation, and for
/// launches of thousands of regions an mmap, page faults and munmap each time). With
/// `keep_samples` false only `sums` are filled, not `samples` (no session keeps a timeline).
void decode_scratch_into(std::span<const uint8_t> bytes, const KernelLayout& layout,
                         DecodeResult& out, bool keep_samples = true);

/// Cycles from `start` to `end` for clocks read as 64-bit (43 significant bits) or 32-bit
/// (optimizations=clock32): one 32-bit wrap between them is undone.
inline uint64_t cycles_between(uint64_t start, uint64_t end) {
  if (end >= start) return end - start;
  if (start < (uint64_t{1} << 32) && end < (uint64_t{1} << 32))
    return end + (uint64_t{1} << 32) - start;
  return 0;
}

}  // namespace proton::instr
