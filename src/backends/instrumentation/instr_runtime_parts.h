// The runtime's internal records, shared by instr_runtime.cpp (the launch side: pools,
// hand-out, the queue) and consumer.cpp (the consumer and decoder threads). Not for other users.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
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
  uint64_t offset = 0;   // ring offset of the slice
  uint64_t end = 0;      // ring offset after it (tail moves here when done)
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
