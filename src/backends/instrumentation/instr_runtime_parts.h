// The runtime's internal records, shared by instr_runtime.cpp (the launch side: pools,
// hand-out, the queue) and consumer.cpp (the consumer and decoder threads). Not for other users.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "backends/instrumentation/compact_copy.h"
#include "backends/instrumentation/instr_runtime.h"

namespace proton::instr {

// A ring over one device allocation: slices are handed out at `head` and given back in order at
// `tail` (offsets grow without bound; position = offset % size). No host twin: only what the
// warps wrote comes back, into the consumer's staging (compact_copy.h).
struct InstrRuntime::Pool {
  uint64_t size = 0;
  uint64_t device = 0;
  uint64_t head = 0;
  uint64_t tail = 0;
  bool closing = false;
  bool failed = false;
  uint64_t deliver_mask = 0;  // the session runtime's bit for this session (its slot)
  // Every slice handed out and not yet back on the host, in ring order (offsets ascend). The
  // tail moves only over the longest prefix of them that is back (copied, failed or given up):
  // with several launching threads a later slice can be queued and copied first, and its end
  // must not give back an earlier slice whose kernel may still write it.
  class Inflight {
   public:
    struct Slice {
      uint64_t offset = 0;
      uint64_t end = 0;
      bool queued = false;  // its launch reached the exit
      bool back = false;    // copied back (or given up): the ring may hand it out again
    };
    void push(uint64_t offset, uint64_t end) {
      if (count_ == slots_.size()) grow();
      slots_[(first_ + count_++) & (slots_.size() - 1)] = Slice{offset, end, false, false};
    }
    /// The slice handed out at `offset`, or null (binary search: offsets ascend).
    Slice* find(uint64_t offset) {
      size_t lo = 0, hi = count_;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        Slice& s = at(mid);
        if (s.offset == offset) return &s;
        if (s.offset < offset) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return nullptr;
    }
    /// Drops the leading slices that are back; returns the end of the last one dropped (or
    /// `from` when none was).
    uint64_t release(uint64_t from) {
      while (count_ > 0 && at(0).back) {
        from = std::max(from, at(0).end);
        first_ = (first_ + 1) & (slots_.size() - 1);
        --count_;
      }
      return from;
    }
    const Slice* oldest() const { return count_ > 0 ? &slots_[first_] : nullptr; }

   private:
    Slice& at(size_t i) { return slots_[(first_ + i) & (slots_.size() - 1)]; }
    void grow() {  // doubles, keeping the order; capacity stays once grown (no steady allocation)
      std::vector<Slice> bigger(slots_.empty() ? 64 : 2 * slots_.size());
      for (size_t i = 0; i < count_; ++i)
        bigger[i] = at(i);
      slots_.swap(bigger);
      first_ = 0;
    }
    std::vector<Slice> slots_;
    size_t first_ = 0;
    size_t count_ = 0;
  };
  Inflight inflight;
  uint64_t stuck_offset = UINT64_MAX;  // the oldest slice a full wait found not yet queued
  uint64_t stuck_since_ns = 0;         // ... first seen then

  /// The slice at `offset` is back on the host (or given up): move the tail as far as it may.
  void give_back(uint64_t offset) {
    if (Inflight::Slice* s = inflight.find(offset)) s->back = true;
    tail = inflight.release(tail);
  }
  /// More than half of the ring is in flight: the consumer should copy now, not gather.
  bool over_half() const { return 2 * (head - tail) > size; }
};

// One batch between the consumer and the decoder: its jobs, its runs of contiguous slices (and
// their kernels), and the pinned staging the runs' headers and compact rows were copied into.
struct InstrRuntime::Copied {
  std::deque<std::unique_ptr<Job>> jobs;
  std::vector<SliceRun> runs;
  std::vector<const KernelInfo*> run_kernels;
  Staging header_stage;
  Staging data_stage;
};

struct InstrRuntime::Job {
  Pool* pool = nullptr;  // nullptr: the discard slice (not decoded)
  uint64_t offset = 0;   // ring offset of the slice (its end is in the pool's Inflight)
  uint64_t bytes = 0;
  uint64_t function = 0;  // the launch's CUfunction (0: unknown)
  // Looked up by the consumer when it takes the batch: the launching thread neither searches
  // the kernels nor touches the shared count, which the decoder's release would bounce back.
  std::shared_ptr<const KernelInfo> kernel;
  ContextId ctx = 0;
  uint64_t sessions = 0;
  uint64_t stream = 0;       // the launch's stream
  void* launched = nullptr;  // event the launching thread recorded (per-thread stream only)
  bool ok = true;
  bool launch_ok = true;  // false: the launch call failed; the slice is only given back
  size_t run = SIZE_MAX;  // this batch's run of slices holding it (SIZE_MAX: nothing to copy)
  uint64_t row = 0;       // its first CTA's row in the run
  uint64_t rows = 0;      // its CTAs
};

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace proton::instr
