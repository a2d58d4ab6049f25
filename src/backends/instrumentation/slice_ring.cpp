#include "backends/instrumentation/slice_ring.h"

#include <bit>

#include "common/prefetch.h"

namespace proton::instr {

SliceRing::SliceRing(uint64_t size)
    : size_((size + kGranule - 1) / kGranule * kGranule),
      granules_(size_ / kGranule),
      pow2_(std::has_single_bit(size_)),
      shift_(pow2_ ? static_cast<uint32_t>(std::countr_zero(size_)) : 0),
      // Written (zeroed) here, at the session's start: left to calloc, each page of the table
      // came in at the first reservation that began on it, a page fault on the launching
      // thread per launch of a ~1 MB slice through the first lap (~300 ns a launch).
      words_(std::make_unique<uint64_t[]>(granules_ == 0 ? 1 : granules_)) {}

SliceRing::~SliceRing() = default;

std::atomic_ref<uint64_t> SliceRing::word(uint64_t key) const {
  // The key's granule within the ring (granules_ is a power of two when size_ is).
  return std::atomic_ref<uint64_t>(words_[in_lap(key) / kGranule]);
}

void SliceRing::prepare_next() const {
  prefetch_for_write(&words_[in_lap(head_.load(std::memory_order_relaxed)) / kGranule]);
}

bool SliceRing::reserve(uint64_t bytes, uint64_t alignment, Slice& out) {
  // `alignment` is a power of two (the allocator checks it): masks, not divisions.
  const uint64_t align_mask = alignment - 1;
  const uint64_t need = (bytes + align_mask) & ~align_mask;
  if (need == 0 || need > size_) return false;
  uint64_t head = head_.load(std::memory_order_relaxed);
  for (;;) {
    // Aligned in the pool (the device base is), not as a position: size_ is only granular.
    const uint64_t lap_start = head - in_lap(head);
    const uint64_t pos = (head - lap_start + align_mask) & ~align_mask;
    const uint64_t start = pos + need <= size_ ? lap_start + pos : lap_start + size_;
    const uint64_t end = (start + need + kGranule - 1) / kGranule * kGranule;
    if (end - tail_.load(std::memory_order_acquire) > size_) return false;
    if (head_.compare_exchange_weak(head, end, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) {
      const uint64_t len = (end - head) / kGranule;
      word(head).store(len | (lap(head) << kLenBits), std::memory_order_release);
      out = {head, start};
      return true;
    }
  }
}

bool SliceRing::set_flag(uint64_t key, uint64_t flag, uint64_t unless) {
  std::atomic_ref<uint64_t> w = word(key);
  uint64_t v = w.load(std::memory_order_acquire);
  while (is_current(v, key) && !(v & unless)) {
    if (w.compare_exchange_weak(v, v | flag, std::memory_order_acq_rel, std::memory_order_acquire))
      return true;
  }
  return false;
}

bool SliceRing::mark_queued(uint64_t key) {
  return set_flag(key, kQueued, kBack);
}

void SliceRing::give_back(uint64_t key) {
  // Only the current lap's reservation, and only once: a word that moved on to a later lap, or
  // a slice given up before its late launch came back, is left alone.
  if (set_flag(key, kBack, kBack)) advance();
}

bool SliceRing::give_up(uint64_t key) {
  if (!set_flag(key, kBack, kBack | kQueued)) return false;
  advance();
  return true;
}

void SliceRing::advance() {
  for (;;) {
    uint64_t tail = tail_.load(std::memory_order_acquire);
    if (tail == head_.load(std::memory_order_acquire)) return;
    std::atomic_ref<uint64_t> w = word(tail);
    uint64_t v = w.load(std::memory_order_acquire);
    // Not back, or not written yet (its reserve() stands between the head's move and the word).
    if (!is_current(v, tail) || !(v & kBack)) return;
    const uint64_t end = tail + (v & kLenMask) * kGranule;
    if (tail_.compare_exchange_strong(tail, end, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      // Cleared unless a later lap's reservation already stands there.
      w.compare_exchange_strong(v, 0, std::memory_order_relaxed);
    }
  }
}

bool SliceRing::oldest(uint64_t& key, bool& queued) const {
  const uint64_t tail = tail_.load(std::memory_order_acquire);
  if (tail == head_.load(std::memory_order_acquire)) return false;
  const uint64_t v = word(tail).load(std::memory_order_acquire);
  key = tail;
  queued = !is_current(v, tail) || (v & kQueued) != 0;
  return true;
}

}  // namespace proton::instr
