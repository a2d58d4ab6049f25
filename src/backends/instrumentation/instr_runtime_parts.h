// The runtime's internal records, shared by instr_runtime.cpp (the launch side: pools,
// hand-out, the queue), consumer.cpp (the consumer thread) and decoders.cpp (the decoder threads).
// Not for other users.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "backends/instrumentation/compact_copy.h"
#include "backends/instrumentation/instr_runtime.h"
#include "backends/instrumentation/slice_ring.h"

namespace proton::instr {

// One session's device allocation and the ring of slices over it (slice_ring.h). Launches
// reserve slices without the runtime's mutex once the device memory exists (`ready`); the
// pool object stays until close() saw `users` fall to zero, so a launch between its allocator
// and its exit always has its pool.
struct InstrRuntime::Pool {
  explicit Pool(uint64_t bytes) : ring(bytes) {}
  SliceRing ring;
  uint64_t device = 0;              // written before `ready`
  uint64_t ctx = 0;                 // the GPU context `device` belongs to (0: not checked)
  std::atomic<bool> ready{false};   // the device memory exists: launches reserve lock-free
  std::atomic<uint64_t> users{0};   // slices reserved whose launch has not reached its exit
  bool closing = false;             // mu_
  bool failed = false;              // mu_: the device memory could not be allocated
  uint64_t deliver_mask = 0;        // the session runtime's bit for this session (its slot)
  uint64_t stuck_key = UINT64_MAX;  // mu_: the oldest slice a full wait found not yet queued
  uint64_t stuck_since_ns = 0;      // ... first seen then
  uint64_t size() const { return ring.size(); }
};

// A launch captured into a CUDA graph (graph_capture.cpp): device memory of its own that every
// replay of the graph writes, and what a replay's records are queued as. Kept for the
// process's life: the graph may outlive every session.
struct InstrRuntime::Captured {
  uint64_t device = 0;
  uint64_t bytes = 0;
  // Set at the launch's exit, before the graph can replay:
  uint64_t function = 0;
  ContextId ctx = 0;
  uint64_t sessions = 0;  // the sessions open at the capture: its replays count in these
  // The last replay context placed and where it went (a loop replays from one place): the
  // launching thread's, under graphs_mu_.
  ContextId last_replay = 0;
  ContextId last_place = 0;
};

/// Each session's device pool when none is given (PROTON_INSTR_POOL_MB, else 256 MB).
uint64_t default_pool_bytes();

// One batch between the consumer and the decoder: its jobs, its runs of contiguous slices (and
// their kernels), and the pinned staging the runs' headers and compact rows were copied into.
struct InstrRuntime::Copied {
  std::deque<std::unique_ptr<Job>> jobs;
  std::vector<SliceRun> runs;
  std::vector<const KernelInfo*> run_kernels;
  uint8_t* headers = nullptr;  // its ranges of the staging arena (taken by the consumer,
  uint8_t* data = nullptr;     // given back once decoded)
  size_t held = 0;             // bytes of those ranges in the current arena
  // The decoders' progress (mu_): jobs [0, next) are taken, `working` chunks of them are being
  // decoded; the batch is done when all are taken and none is.
  size_t next = 0;
  size_t working = 0;
};

struct InstrRuntime::Job {
  Pool* pool = nullptr;
  LaunchQueue* queue = nullptr;  // the launching thread's queue it came from
  uint64_t key = 0;              // the slice's reservation in the pool's ring
  uint64_t offset = 0;           // ring position of the slice
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
  uint64_t work = 0;      // bytes of its records in the staging (what decoding it reads)
};

// The calling thread's side of its launches: the slice in flight between alloc() and
// launch_exit(), and its queue to the consumer. A thread that ends between the two gives its
// slice back (no kernel of it will write it) and leaves its queue to be emptied.
struct ThreadSide {
  bool valid = false;
  void* pool = nullptr;  // InstrRuntime::Pool; null: the discard slice
  SliceRing::Slice slice;
  uint64_t bytes = 0;
  uint64_t in_flight = 0;    // the ring's bytes in flight at the reservation
  void* captured = nullptr;  // InstrRuntime::Captured: a launch on a capturing stream
  std::shared_ptr<LaunchQueue> queue;
  ~ThreadSide();
};
ThreadSide& thread_side();

/// The last object of `free` (recycled, no allocation), or a new one when there is none.
template <class T>
std::unique_ptr<T> reuse_or_make(std::vector<std::unique_ptr<T>>& free) {
  if (free.empty()) return std::make_unique<T>();
  std::unique_ptr<T> t = std::move(free.back());
  free.pop_back();
  return t;
}

inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace proton::instr
