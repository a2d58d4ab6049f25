// The pinned host buffer the copy-back copies into, shared by the batches in flight.
//
// Pinning host memory takes the driver for milliseconds (4-35 ms per buffer on the H100 host,
// longer for larger ones: the program's launches waited behind it), and freeing it synchronizes
// the device. So the runtime pins one buffer and hands out ranges of it: each copied batch
// takes a range for its headers and one for its records, and gives both back once decoded
// (decoders finish out of order). A batch that finds no room waits for the decoders; the
// buffer is replaced by a larger one only when a batch does not fit even with nothing else in
// flight. Offsets only: the runtime owns the memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace proton::instr {

class StagingArena {
 public:
  static constexpr size_t kAlign = 64;

  /// An empty arena over `size` bytes at `base` (nullptr, 0: none yet).
  void reset(uint8_t* base, size_t size);
  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }

  /// The room a take of `bytes` occupies.
  static size_t rounded(size_t bytes) {
    return bytes == 0 ? kAlign : (bytes + kAlign - 1) / kAlign * kAlign;
  }
  /// A free range of `bytes` (aligned to kAlign), or nullptr when none is free now.
  uint8_t* take(size_t bytes);
  /// Gives back a range take() returned; false for a pointer that is not one (ignored).
  bool give(const uint8_t* p);
  /// Whether `p` lies in this arena's buffer.
  bool holds(const uint8_t* p) const { return p >= base_ && p < base_ + size_; }
  /// Bytes of the ranges taken now.
  size_t in_use() const;

 private:
  struct Range {
    size_t at;
    size_t bytes;
  };
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  std::vector<Range> live_;  // sorted by `at`; a handful (one or two per batch in flight)
};

}  // namespace proton::instr
