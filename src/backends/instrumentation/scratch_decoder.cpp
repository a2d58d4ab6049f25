#include "backends/instrumentation/scratch_decoder.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace proton::instr {

namespace {

constexpr size_t kMaxErrors = 8;
constexpr uint32_t kMaxScopes = 256;  // 8-bit scope ids

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void note(DecodeResult& r, std::string message) {
  if (r.errors.size() < kMaxErrors) r.errors.push_back(std::move(message));
}

// Pairs the start/end events of one unit's segment, oldest first. Starts are kept per scope id,
// so nested and interleaved regions pair independently, as the lowering assigns one id per
// region name. One Pairing serves every segment of a decode: a segment that leaves regions open
// clears the ids (rare); one that closed all it opened clears nothing (clearing all 256 per
// segment cost ~0.3 us, most of a launch's decode on the H100).
struct Pairing {
  static constexpr uint64_t kClosed = ~uint64_t{0};  // clocks have 43 bits at most
  Pairing() { start_clock.fill(kClosed); }
  std::array<uint64_t, kMaxScopes> start_clock;  // the open start's clock, or kClosed
  uint32_t open = 0;                             // scopes open now

  // How the units of a CTA share each scope's cycles. Nothing is written to memory per event:
  // the event loop sets a bit of a local mask for scopes 0-63 (the lowering numbers region
  // names from 0: kernels rarely have more) and a flag for any other, and each segment's cycles
  // per scope are read off the sums at its end as their growth since `seen` (equal to the sums
  // of every scope between segments). A per-event write here cost the loop its registers (the
  // compiler reloaded the sums' pointer and counts at every event): twice the decode time.
  std::array<uint64_t, kMaxScopes> seen{};         // sums[s].cycles at the last segment's end
  std::array<uint64_t, kMaxScopes> seen_count{};   // sums[s].count, kept for scopes 64-255 only
  std::array<uint64_t, kMaxScopes> cta_slowest{};  // this CTA's slowest unit so far
  std::array<uint64_t, kMaxScopes / 64> cta_touched{};

  void close_unit(ScopeSum* sums, uint32_t s) {
    const uint64_t unit = sums[s].cycles - seen[s];
    seen[s] = sums[s].cycles;
    ++sums[s].units;
    cta_slowest[s] = std::max(cta_slowest[s], unit);
  }

  /// Ends the segment: returns how many regions were left open, and forgets them. Usually
  /// none are: then nothing is cleared. The unit's cycles per scope (`low`: the scopes under 64
  /// it closed; `high`: whether it closed any other) join the CTA's slowest.
  uint64_t finish(ScopeSum* sums, uint64_t low, bool high) {
    cta_touched[0] |= low;
    for (uint64_t bits = low; bits != 0; bits &= bits - 1)
      close_unit(sums, static_cast<uint32_t>(__builtin_ctzll(bits)));
    if (high) {
      for (uint32_t s = 64; s < kMaxScopes; ++s) {
        if (sums[s].count == seen_count[s]) continue;
        seen_count[s] = sums[s].count;
        close_unit(sums, s);
        cta_touched[s >> 6] |= uint64_t{1} << (s & 63);
      }
    }
    const uint64_t left_open = open;
    if (open != 0) start_clock.fill(kClosed);
    open = 0;
    return left_open;
  }

  /// Ends a CTA: each scope's slowest unit in it goes to the scope's sums.
  void finish_cta(ScopeSum* sums) {
    for (uint32_t word = 0; word < cta_touched.size(); ++word) {
      for (uint64_t bits = cta_touched[word]; bits != 0; bits &= bits - 1) {
        const uint32_t s = word * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
        sums[s].slowest_unit_cycles += cta_slowest[s];
        ++sums[s].ctas;
        cta_slowest[s] = 0;
      }
      cta_touched[word] = 0;
    }
  }
};

// One segment's events, oldest first: each end closes its scope's open start; the region's
// cycles go to the scope's sum (and the region itself to `r.samples` with kKeep). Counts are
// kept in locals and added once (through `r` the compiler reloaded them at every event).
template <bool kKeep>
void decode_segment(const uint8_t* seg, uint32_t seg_bytes, uint32_t words_written,
                    const CtaHeader& cta, uint32_t unit, DecodeResult& r, uint64_t& min_clock,
                    Pairing& pairs) {
  const uint64_t capacity = seg_bytes / kEventBytes;
  const uint64_t written = uint64_t{words_written} / 2;
  if (capacity == 0 || written == 0) return;
  uint64_t first = 0;
  uint64_t count = written;
  if (written > capacity) {  // wrapped: the oldest surviving event sits at the write cursor
    ++r.wrapped_units;
    r.overwritten_events += written - capacity;
    first = written % capacity;
    count = capacity;
  }
  uint64_t unmatched = 0, regions = 0, min_start = min_clock;
  uint32_t open_now = pairs.open;
  ScopeSum* sums = r.sums.data();
  uint64_t* open = pairs.start_clock.data();
  uint64_t low = 0;   // scopes 0-63 this segment closed, one bit each
  bool high = false;  // whether it closed one of 64-255
  auto pair = [&](const uint8_t* e) __attribute__((always_inline)) {
    const uint32_t w0 = load_u32(e);
    const uint32_t scope = (w0 >> 23) & 0xffu;
    const uint64_t clock = (uint64_t{w0 & 0x7ffu} << 32) | load_u32(e + 4);
    if ((w0 & kAsyncFlag) != 0) [[unlikely]] {  // paired per CTA, across units (pair_async)
      r.async_scratch.push_back(
          {clock, unit, 0, static_cast<uint8_t>(scope), (w0 >> 31) != 0, false});
      return;
    }
    uint64_t& start = open[scope];
    if ((w0 >> 31) == 0) {  // a start: a second one keeps the newer
      if (start != Pairing::kClosed) {
        ++unmatched;
      } else {
        ++open_now;
      }
      start = clock;
      return;
    }
    if (start == Pairing::kClosed) {  // its start was overwritten (wrap) or never written
      ++unmatched;
      return;
    }
    const uint64_t begin = start;
    start = Pairing::kClosed;
    --open_now;
    const uint64_t cycles = cycles_between(begin, clock);
    sums[scope].cycles += cycles;
    ++sums[scope].count;
    if (scope < 64) {
      low |= uint64_t{1} << scope;
    } else {
      high = true;
    }
    ++regions;
    min_start = std::min(min_start, begin);
    if constexpr (kKeep)
      r.samples.push_back({cta.cta, cta.sm, unit, scope, begin, begin + cycles, unit, false});
  };
  // From the cursor to the segment's end, then from its start (no division per event).
  const uint64_t tail_end = std::min(first + count, capacity);
  for (uint64_t i = first; i < tail_end; ++i)
    pair(seg + i * kEventBytes);
  for (uint64_t i = 0; i < first; ++i)
    pair(seg + i * kEventBytes);
  pairs.open = open_now;
  r.unmatched_events += unmatched + pairs.finish(sums, low, high);
  r.regions += regions;
  min_clock = min_start;
}

// Open starts of each event id, oldest first: a queue per id, linked through the endpoints
// (AsyncEndpoint::next), so pairing allocates nothing.
struct AsyncQueues {
  static constexpr uint32_t kNone = ~uint32_t{0};
  std::array<uint32_t, kMaxScopes> head, tail;
  AsyncQueues() {
    head.fill(kNone);
    tail.fill(kNone);
  }
  void push(std::vector<AsyncEndpoint>& eps, uint32_t i) {
    const uint8_t id = eps[i].id;
    eps[i].next = kNone;
    if (tail[id] == kNone) {
      head[id] = i;
    } else {
      eps[tail[id]].next = i;
    }
    tail[id] = i;
  }
  uint32_t pop(const std::vector<AsyncEndpoint>& eps, uint8_t id) {
    const uint32_t i = head[id];
    if (i == kNone) return kNone;
    head[id] = eps[i].next;
    if (head[id] == kNone) tail[id] = kNone;
    return i;
  }
};

// Pairs one CTA's async records (every unit's, gathered in segment order while its segments were
// read). First within each unit, in its own order: a warp that starts and ends its own events
// (every warp of a plain Triton kernel records them) pairs with itself. What is left pairs
// across the CTA's units in clock order: an end closes the oldest open start of its event id
// (a producer warp's copies, waited on by a consumer warp, in the order they were issued). An
// end with no open start and a start never ended are unmatched. Each pair sums into its id's
// scope, so it sits on the tree as a region does, as one unit per CTA (one transaction).
void pair_async(const CtaHeader& cta, DecodeResult& r, bool keep, uint64_t& min_clock,
                Pairing& pairs) {
  std::vector<AsyncEndpoint>& eps = r.async_scratch;
  if (eps.empty()) return;
  constexpr uint32_t kNone = AsyncQueues::kNone;
  std::array<uint64_t, kMaxScopes> cta_cycles{};
  std::array<uint64_t, kMaxScopes / 64> touched{};
  auto close = [&](const AsyncEndpoint& b, const AsyncEndpoint& e) {
    const uint64_t cycles = cycles_between(b.clock, e.clock);
    ScopeSum& sum = r.sums[e.id];
    sum.cycles += cycles;
    ++sum.count;
    cta_cycles[e.id] += cycles;
    touched[e.id >> 6] |= uint64_t{1} << (e.id & 63);
    ++r.regions;
    ++r.async_events;
    if (b.unit != e.unit) ++r.cross_unit_events;
    min_clock = std::min(min_clock, b.clock);
    if (keep) {
      r.samples.push_back({cta.cta, cta.sm, b.unit, e.id, b.clock, b.clock + cycles, e.unit, true});
    }
  };
  // Within each unit (its records are contiguous, oldest first).
  AsyncQueues q;
  for (uint32_t first = 0; first < eps.size();) {
    uint32_t last = first;
    while (last < eps.size() && eps[last].unit == eps[first].unit)
      ++last;
    for (uint32_t i = first; i < last; ++i) {
      AsyncEndpoint& e = eps[i];
      if (!e.end) {
        q.push(eps, i);
        continue;
      }
      const uint32_t b = q.pop(eps, e.id);
      if (b == kNone) continue;  // left for the cross-unit pass
      close(eps[b], e);
      eps[b].paired = e.paired = true;
    }
    for (uint32_t i = first; i < last; ++i)
      q.head[eps[i].id] = q.tail[eps[i].id] = kNone;
    first = last;
  }
  // Across units, in clock order, what no unit paired by itself.
  eps.erase(std::remove_if(eps.begin(), eps.end(), [](const AsyncEndpoint& e) { return e.paired; }),
            eps.end());
  // Equal clocks keep their unit and segment order: the position breaks ties (held in `next`
  // until the queues take it over; std::stable_sort would allocate a buffer per CTA).
  for (uint32_t i = 0; i < eps.size(); ++i)
    eps[i].next = i;
  std::sort(eps.begin(), eps.end(), [](const AsyncEndpoint& a, const AsyncEndpoint& b) {
    return a.clock != b.clock ? a.clock < b.clock : a.next < b.next;
  });
  uint64_t unmatched = 0;
  for (uint32_t i = 0; i < eps.size(); ++i) {
    AsyncEndpoint& e = eps[i];
    if (!e.end) {
      q.push(eps, i);
      continue;
    }
    const uint32_t b = q.pop(eps, e.id);
    if (b == kNone) {
      ++unmatched;
      continue;
    }
    close(eps[b], e);
  }
  for (uint32_t id = 0; id < kMaxScopes; ++id)
    for (uint32_t i = q.head[id]; i != kNone; i = eps[i].next)
      ++unmatched;
  for (uint32_t word = 0; word < touched.size(); ++word) {
    for (uint64_t bits = touched[word]; bits != 0; bits &= bits - 1) {
      const uint32_t s = word * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
      ScopeSum& sum = r.sums[s];
      ++sum.units;
      ++sum.ctas;
      sum.slowest_unit_cycles += cta_cycles[s];
      // The segment pairing reads each scope's growth since `seen`: these sums are not a unit's.
      pairs.seen[s] = sum.cycles;
      pairs.seen_count[s] = sum.count;
    }
  }
  r.unmatched_events += unmatched;
  r.unmatched_async += unmatched;
  eps.clear();
}

}  // namespace

uint32_t data_offset_for(const KernelLayout& layout, uint32_t data_bytes) {
  (void)data_bytes;
  if (layout.data_offset != 0) return layout.data_offset;
  // Triton 3.6's lowering copies the data right after the per-warp indices (byte 56 for four
  // warps; read from its LLVM IR); the slice's tail up to profile_scratch_size is padding.
  return kHeaderFixedBytes + 4 * layout.num_warps;
}

std::vector<uint32_t> profiled_units(const KernelLayout& layout) {
  std::vector<uint32_t> units = layout.units;
  if (units.empty()) {
    units.resize(layout.num_warps);
    for (uint32_t i = 0; i < layout.num_warps; ++i)
      units[i] = i;
  }
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  return units;
}

DecodeResult decode_scratch(std::span<const uint8_t> bytes, const KernelLayout& layout) {
  DecodeResult r;
  decode_scratch_into(bytes, layout, r);
  return r;
}

void decode_scratch_into(std::span<const uint8_t> bytes, const KernelLayout& layout,
                         DecodeResult& r, bool keep_samples) {
  // A fresh result that keeps the vectors' capacity (every other field as DecodeResult{} has it).
  std::vector<CtaHeader> ctas = std::move(r.ctas);
  std::vector<RegionSample> samples = std::move(r.samples);
  std::vector<AsyncEndpoint> async_scratch = std::move(r.async_scratch);
  r = DecodeResult{};
  ctas.clear();
  samples.clear();
  async_scratch.clear();
  r.ctas = std::move(ctas);
  r.samples = std::move(samples);
  r.async_scratch = std::move(async_scratch);
  const uint32_t slice = layout.scratch_bytes;
  const uint32_t indices_end = kHeaderFixedBytes + 4 * layout.num_warps;
  if (slice == 0 || layout.num_warps == 0 || slice < indices_end) {
    note(r, "kernel layout: scratch size " + std::to_string(slice) + " cannot hold the header of " +
                std::to_string(layout.num_warps) + " warps");
    return;
  }
  const std::vector<uint32_t> units = profiled_units(layout);
  if (units.back() >= layout.num_warps) {
    note(r, "kernel layout: profiled warp " + std::to_string(units.back()) +
                " but the kernel has " + std::to_string(layout.num_warps) + " warps");
    return;
  }
  const size_t num_ctas = bytes.size() / slice;
  if (keep_samples) r.samples.reserve(num_ctas * units.size());
  Pairing pairs;
  auto* const segment = keep_samples ? &decode_segment<true> : &decode_segment<false>;
  if (bytes.size() % slice != 0) {
    note(r, "truncated buffer: " + std::to_string(bytes.size() % slice) + " trailing bytes after " +
                std::to_string(num_ctas) + " whole CTA slices");
  }
  for (size_t c = 0; c < num_ctas; ++c) {
    const uint8_t* base = bytes.data() + c * slice;
    const size_t at = c * slice;
    uint32_t preamble = load_u32(base);
    if (preamble == 0) {
      ++r.skipped_ctas;
      continue;
    }
    if (preamble == kMismatchedRowPreamble) {
      ++r.corrupt_ctas;
      note(r, "CTA slice " + std::to_string(c) + " (byte " + std::to_string(at + 12) +
                  "): data size differs from the other CTAs of the launch, skipped");
      continue;
    }
    if (preamble != kPreamble) {
      ++r.corrupt_ctas;
      note(r, "CTA slice " + std::to_string(c) + " (byte " + std::to_string(at) +
                  "): bad preamble, skipped");
      continue;
    }
    CtaHeader h;
    h.cta = load_u32(base + 4);
    h.sm = load_u32(base + 8);
    uint32_t data_bytes = load_u32(base + 12);
    h.init_ns = load_u64(base + 16);
    h.pre_final_ns = load_u64(base + 24);
    h.post_final_ns = load_u64(base + 32);
    uint32_t offset = data_offset_for(layout, data_bytes);
    const uint32_t segments = std::max<uint32_t>(segment_count(layout, units.size()), 1);
    uint32_t seg_bytes = segments < units.size() ? 0 : data_bytes / segments;
    if (data_bytes == 0 || offset < indices_end || offset > slice || data_bytes > slice - offset ||
        seg_bytes < kEventBytes) {
      ++r.corrupt_ctas;
      note(r, "CTA slice " + std::to_string(c) + " (byte " + std::to_string(at + 12) +
                  "): data size " + std::to_string(data_bytes) + " does not fit the " +
                  std::to_string(slice) + "-byte slice, skipped");
      continue;
    }
    uint64_t min_clock = UINT64_MAX;
    for (size_t i = 0; i < units.size(); ++i) {
      uint32_t words = load_u32(base + kHeaderFixedBytes + 4 * units[i]);
      segment(base + offset + i * seg_bytes, seg_bytes, words, h, units[i], r, min_clock, pairs);
    }
    pairs.finish_cta(r.sums.data());
    pair_async(h, r, keep_samples, min_clock, pairs);
    h.first_clock = min_clock == UINT64_MAX ? 0 : min_clock;
    r.ctas.push_back(h);
  }
}

}  // namespace proton::instr
