// Builds profile-scratch slices the way Triton's lowering lays them out (scratch_decoder.h), so
// the decoder and the runtime are tested on the CPU.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/instrumentation/scratch_decoder.h"

namespace proton::instr::testing {

struct Event {
  bool end;
  uint32_t scope;
  uint64_t clock;
  bool async = false;  // an async event's record (pl.start_event / pl.end_event, Triton 3.8+)
};

class ScratchBuilder {
 public:
  ScratchBuilder(uint32_t num_warps, uint32_t data_bytes, uint32_t units, uint32_t pad = 72)
      : warps_(num_warps), data_(data_bytes), units_(units) {
    slice_ = kHeaderFixedBytes + 4 * num_warps + data_bytes + pad;
  }
  uint32_t slice_bytes() const { return slice_; }
  uint32_t warps() const { return warps_; }

  /// Appends one CTA; events[i] are unit i's events in the order written (may exceed the
  /// segment: the builder wraps like the device does).
  void add_cta(uint32_t cta, uint32_t sm, const std::vector<std::vector<Event>>& events,
               uint64_t init_ns = 1000, uint32_t preamble = kPreamble) {
    size_t base = bytes_.size();
    bytes_.resize(base + slice_, 0);
    uint8_t* p = bytes_.data() + base;
    put32(p, preamble);
    put32(p + 4, cta);
    put32(p + 8, sm);
    put32(p + 12, data_);
    put64(p + 16, init_ns);
    put64(p + 24, init_ns + 500);
    put64(p + 32, init_ns + 600);
    const uint32_t seg = data_ / units_;
    const uint32_t cap = seg / 8;
    uint8_t* data = p + kHeaderFixedBytes + 4 * warps_;
    for (uint32_t u = 0; u < events.size() && u < units_; ++u) {
      const auto& ev = events[u];
      put32(p + kHeaderFixedBytes + 4 * u, static_cast<uint32_t>(ev.size() * 2));
      for (size_t i = 0; i < ev.size(); ++i) {
        uint8_t* e = data + u * seg + (i % cap) * 8;
        uint32_t w0 = (ev[i].end ? 1u << 31 : 0u) | ((ev[i].scope & 0xffu) << 23) |
                      (ev[i].async ? kAsyncFlag : 0u) |
                      static_cast<uint32_t>((ev[i].clock >> 32) & 0x7ffu);
        put32(e, w0);
        put32(e + 4, static_cast<uint32_t>(ev[i].clock));
      }
    }
  }
  std::vector<uint8_t>& bytes() { return bytes_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  static void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
  static void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

 private:
  uint32_t warps_, data_, units_, slice_;
  std::vector<uint8_t> bytes_;
};

}  // namespace proton::instr::testing
