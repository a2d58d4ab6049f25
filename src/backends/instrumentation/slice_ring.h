// The ring of one device pool, shared without a lock: launching threads reserve slices at its
// head (one compare-and-swap), and slices come back in any order but free the ring only in
// ring order, at its tail.
//
// Positions grow without bound (position % size is the place in the pool). Every reservation
// covers [key, end): `key` is the head it found, `end` a multiple of kGranule past the slice,
// so reservations tile the positions and the tail always stands on a key. A reservation's
// state is one word in a table indexed by key / kGranule (mod the ring's granules): its length,
// the lap its key is on (a word left from an earlier lap never passes for the current one) and
// whether its launch was queued and whether it is back. Whoever gives a slice back moves the
// tail over every leading reservation that is back; the head never passes tail + size, so a
// slice a kernel may still write is never handed out again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace proton::instr {

class SliceRing {
 public:
  /// Reservations are whole granules (Triton's profile-scratch alignment).
  static constexpr uint64_t kGranule = 128;

  /// `size` is rounded up to a multiple of kGranule.
  explicit SliceRing(uint64_t size);
  ~SliceRing();
  SliceRing(const SliceRing&) = delete;
  SliceRing& operator=(const SliceRing&) = delete;

  uint64_t size() const { return size_; }

  struct Slice {
    uint64_t key = 0;    // where the reservation begins: names it to mark_queued / give_back
    uint64_t start = 0;  // the slice's position (aligned; start % size is its pool offset)
  };
  /// Reserves `bytes` at a pool offset that is a multiple of `alignment` (a power of two) and
  /// does not straddle the ring's end. False when the ring lacks the room now (or ever).
  bool reserve(uint64_t bytes, uint64_t alignment, Slice& out);
  /// The slice's launch reached its exit (its records will be copied and given back). False:
  /// the slice was given up before (give_up), so its records are no longer its launch's.
  bool mark_queued(uint64_t key);
  /// The slice is back on the host: the tail moves over every leading slice that is back. Any
  /// thread may call it; a second call for one reservation does nothing.
  void give_back(uint64_t key);
  /// Gives back a slice whose launch has not reached its exit (its thread seems gone). False,
  /// and nothing changes, when the launch was queued meanwhile or the slice is back already:
  /// exactly one of give_up and mark_queued wins.
  bool give_up(uint64_t key);

  /// The reservation at the tail, if any: its key and whether its launch was queued (a
  /// reservation whose word is not written yet counts as queued: its thread is in reserve()).
  bool oldest(uint64_t& key, bool& queued) const;
  uint64_t in_flight() const {
    return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  }
  /// More than half of the ring is in flight: the consumer should copy now, not gather.
  bool over_half() const { return 2 * in_flight() > size_; }
  bool over_three_quarters() const { return 4 * in_flight() > 3 * size_; }
  /// Asks for the word of the reservation the head would make next (cleared by whoever gave
  /// the slice there back, a lap ago).
  void prepare_next() const;

 private:
  static constexpr uint64_t kLenBits = 38;  // length in granules
  static constexpr uint64_t kLapBits = 22;
  static constexpr uint64_t kQueued = uint64_t{1} << 62;
  static constexpr uint64_t kBack = uint64_t{1} << 63;
  static constexpr uint64_t kLenMask = (uint64_t{1} << kLenBits) - 1;
  static constexpr uint64_t kLapMask = (uint64_t{1} << kLapBits) - 1;

  std::atomic_ref<uint64_t> word(uint64_t key) const;
  // Positions over the ring's size: shifts and masks for a power-of-two size (the default
  // pool's), divisions otherwise; a launch reserves and queues with no division then.
  uint64_t laps(uint64_t pos) const { return pow2_ ? pos >> shift_ : pos / size_; }
  uint64_t in_lap(uint64_t pos) const { return pow2_ ? pos & (size_ - 1) : pos % size_; }
  uint64_t lap(uint64_t key) const { return laps(key) & kLapMask; }
  bool is_current(uint64_t w, uint64_t key) const {
    return w != 0 && ((w >> kLenBits) & kLapMask) == lap(key);
  }
  void advance();
  // Sets `flag` on the current lap's word of `key` unless any of `unless` is set; false then
  // (or when the word is not key's).
  bool set_flag(uint64_t key, uint64_t flag, uint64_t unless);

  const uint64_t size_;
  const uint64_t granules_;
  const bool pow2_;       // size_ is a power of two
  const uint32_t shift_;  // log2(size_) when it is
  // One word per granule (1/16 of the pool's size), zeroed when the ring is made.
  const std::unique_ptr<uint64_t[]> words_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by launching threads
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by whoever gives back
};

}  // namespace proton::instr
