// The runtime side of intra-kernel instrumentation: device pools, the per-launch hand-out, the
// asynchronous copy-back and the consumer thread that decodes and aggregates.
//
// Per launch (the launching thread, no host round trip, no heap allocation in steady state):
//   alloc()        Triton's launcher asks for the launch's profile scratch: a bump of the ring
//                  pool's head under one uncontended mutex, remembered in a thread-local until
//                  the launch returns;
//   launch_exit()  records an event on the launch's stream (the one driver call per launch) and
//                  hands the job to the consumer.
// The consumer takes every queued job as a batch: makes our copy stream wait for each launch's
// event, copies each contiguous run of slices into the pool's pinned twin (one copy per run),
// waits for one event after the copies, decodes each slice, adds region totals under the
// kernel's node, and moves the ring's tail.
// When the ring is full a launch waits for the consumer up to `overflow_wait_ms`, then writes
// into a discard slice instead: counted as an overflow, never a crash.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/instrumentation/device_api.h"
#include "backends/instrumentation/scratch_decoder.h"
#include "common/ids.h"

namespace proton::instr {

/// How to decode and name one compiled kernel's regions.
struct KernelInfo {
  NameId name = kNoName;
  KernelLayout layout;
  std::vector<NameId> scope_names;     // by scope id (kNoName: unknown id)
  std::vector<int32_t> scope_parents;  // by scope id (-1: top level)
};

struct InstrStats {
  uint64_t launches = 0;         // launches that got a slice of a pool
  uint64_t decoded = 0;          // launches decoded
  uint64_t overflows = 0;        // launches that got the discard slice (pool full)
  uint64_t unknown_kernels = 0;  // launches of kernels never registered (not decoded)
  uint64_t copy_errors = 0;      // driver calls that failed (that launch's data is lost)
  uint64_t samples = 0;          // closed regions decoded
  uint64_t wrapped_units = 0;
  uint64_t overwritten_events = 0;
  uint64_t unmatched_events = 0;
  uint64_t corrupt_ctas = 0;
  uint64_t bytes_copied = 0;
  uint64_t pool_bytes = 0;  // device bytes held by pools now
  uint64_t max_in_flight_bytes = 0;
};

/// Where decoded launches go (the session runtime; tests pass their own).
class RegionSink {
 public:
  virtual ~RegionSink() = default;
  virtual void deliver(uint64_t sessions, ContextId ctx, const KernelInfo& kernel,
                       const DecodeResult& decoded, uint32_t device_id, uint32_t clock_khz) = 0;
};

class InstrRuntime {
 public:
  static InstrRuntime& get();

  /// Tests: a fake device and sink. Call before open().
  void set_device_api(std::unique_ptr<DeviceApi> api);
  void set_sink(RegionSink* sink);

  /// Opens session `session`'s pool of `pool_bytes` (0: PROTON_INSTR_POOL_MB or 64 MB). The
  /// driver is loaded and the device memory allocated on the first launch, on the launching
  /// thread (its context); alloc() throws std::runtime_error when there is no driver.
  /// `deliver_mask`: the bit(s) of the session runtime's SessionMask that this session's regions
  /// go to (its slot, which is not its public id once ids grow past the slots); 0: bit `session`.
  void open(uint32_t session, uint64_t pool_bytes, uint64_t deliver_mask = 0);
  /// Drains every queued launch, then frees the session's pool.
  void close(uint32_t session);
  /// Waits until every launch queued so far is decoded and delivered.
  void drain();

  void register_kernel(uint64_t function, KernelInfo info);

  /// Triton's profile allocator: a device address for `bytes` (aligned to `alignment`).
  uint64_t alloc(uint64_t bytes, uint64_t alignment, uint64_t stream);
  /// Triton's launch-exit hook: queues the copy-back of the slice this thread was given.
  void launch_exit(uint64_t function, uint64_t stream, ContextId ctx, uint64_t sessions);

  InstrStats stats();
  std::vector<std::string> errors();  // first few decode errors, for the user
  uint32_t overflow_wait_ms = 1000;

 private:
  struct Pool;
  struct Job;
  InstrRuntime() = default;
  ~InstrRuntime();
  bool ensure_device(std::string& why);  // requires mu_
  bool ensure_pool(Pool& pool);          // requires mu_
  void consume();
  void copy_back(std::deque<std::unique_ptr<Job>>& batch, void* copied);  // consumer thread
  void finish(Job& job);
  void* take_event();                       // requires mu_
  void note_copy_error(const char* stage);  // requires mu_

  std::mutex mu_;  // guards everything below but the atomics; never held across a decode
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::unique_ptr<DeviceApi> api_;
  bool api_loaded_ = false;
  uint64_t api_generation_ = 0;  // bumped when api_ changes; read by the consumer after a batch
  std::string api_why_;
  RegionSink* sink_ = nullptr;
  void* copy_stream_ = nullptr;
  std::map<uint32_t, std::unique_ptr<Pool>> pools_;
  std::map<uint64_t, std::shared_ptr<const KernelInfo>> kernels_;
  std::deque<std::unique_ptr<Job>> queue_;
  std::vector<void*> free_events_;
  void* batch_event_ = nullptr;  // the consumer's event after each batch's copies
  std::vector<std::unique_ptr<Job>> free_jobs_;
  uint64_t discard_ = 0;
  uint64_t discard_bytes_ = 0;
  std::vector<uint64_t> old_discards_;  // freed at exit: a kernel may still write them
  uint64_t queued_ = 0;
  uint64_t finished_ = 0;
  std::thread consumer_;
  bool stop_ = false;
  InstrStats stats_;
  std::vector<std::string> errors_;
  std::vector<std::string> copy_error_lines_;  // the first few copy errors, with the driver's
  bool said_copy_error_ = false;  // the first copy error is said on stderr, once per process
};

}  // namespace proton::instr
