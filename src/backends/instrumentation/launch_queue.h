// One launching thread's queue of instrumented launches for the consumer: a fixed ring of
// records, one writer (the thread), one reader (the consumer), no lock. The writer touches the
// reader's index only to see whether there is room; the reader moves it once per batch.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/ids.h"
#include "common/prefetch.h"

namespace proton::instr {

struct LaunchRecord {
  void* pool = nullptr;   // the pool the slice came from (held open until the record is done)
  uint64_t key = 0;       // the slice's reservation in the pool's ring (SliceRing::Slice)
  uint64_t start = 0;     // the slice's position in the ring
  uint64_t bytes = 0;     // its size
  uint64_t function = 0;  // the launch's CUfunction (0: unknown)
  uint64_t stream = 0;
  uint64_t sessions = 0;     // delivery bits of the sessions active at the launch
  void* launched = nullptr;  // event the launching thread recorded (per-thread stream only)
  uint64_t in_flight = 0;    // the ring's bytes in flight when the slice was reserved
  ContextId ctx = 0;
  bool launch_ok = true;  // false: the launch call failed (the slice is only given back)
  bool event_ok = true;   // false: recording `launched` failed (counted, not copied)
};

class LaunchQueue {
 public:
  static constexpr uint64_t kSlots = 1024;

  /// Writer: false when the consumer has not taken the oldest kSlots records yet.
  bool push(const LaunchRecord& r) {
    const uint64_t w = written_.load(std::memory_order_relaxed);
    if (w - taken_.load(std::memory_order_acquire) >= kSlots) return false;
    slots_[w % kSlots] = r;
    // seq_cst: ordered before the writer's look at whether the consumer sleeps (see
    // InstrRuntime::launch_exit), as the consumer's look here is after it says it sleeps.
    written_.store(w + 1, std::memory_order_seq_cst);
    return true;
  }
  /// Writer: asks for the next record's slot (the lines the reader took it from last lap).
  void prepare_next() const {
    const LaunchRecord* next = &slots_[written_.load(std::memory_order_relaxed) % kSlots];
    prefetch_for_write(next);
    prefetch_for_write(reinterpret_cast<const char*>(next + 1) - 1);
  }
  /// Writer: records not taken yet, this one included.
  uint64_t pending() const {
    return written_.load(std::memory_order_relaxed) - taken_.load(std::memory_order_acquire);
  }

  /// Reader: up to `most` records, oldest first, passed to `take(const LaunchRecord&)`; returns
  /// how many.
  template <class F>
  uint64_t take(uint64_t most, F&& take) {
    const uint64_t t = taken_.load(std::memory_order_relaxed);
    const uint64_t w = written_.load(std::memory_order_seq_cst);
    const uint64_t n = w - t < most ? w - t : most;
    for (uint64_t i = 0; i < n; ++i)
      take(slots_[(t + i) % kSlots]);
    taken_.store(t + n, std::memory_order_release);
    return n;
  }
  /// Anyone: records taken by the consumer so far.
  uint64_t taken() const { return taken_.load(std::memory_order_acquire); }
  /// Anyone: records written so far (drain waits for them).
  uint64_t written() const { return written_.load(std::memory_order_seq_cst); }
  bool empty() const { return taken_.load(std::memory_order_acquire) == written(); }

  // The runtime's bookkeeping, under its mutex: records decoded and delivered (or given up),
  // and whether the writer thread has ended (the queue goes once it is also empty).
  uint64_t finished = 0;
  std::atomic<bool> writer_gone{false};

 private:
  alignas(64) std::atomic<uint64_t> written_{0};
  alignas(64) std::atomic<uint64_t> taken_{0};
  alignas(64) std::array<LaunchRecord, kSlots> slots_{};
};

}  // namespace proton::instr
