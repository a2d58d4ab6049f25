// Host buffers for CUPTI activity records, and the two process-wide buffer callbacks.
//
// CUPTI asks for an empty buffer when its current one fills (on whichever thread is running
// then, often a launching thread) and hands full ones back on its own worker thread, or on the
// thread calling cuptiActivityFlushAll. Buffers come from a pool that recycles completed ones,
// so steady state performs no allocation; the pool is capped, and past the cap the request is
// declined and CUPTI counts the records it drops (reported through the processor).
//
// The callbacks have no user-data pointer, so the consumer (the backend, or the benchmark
// floor) is registered globally; the pool outlives every consumer because CUPTI may return a
// buffer after the consumer has gone.
//
// Delivery is inline (the consumer runs on the thread CUPTI completes the buffer on) or, with
// set_buffer_thread(true), on a worker thread of ours: completion then only queues the buffer,
// so CUPTI's thread, which launches may wait on, is back at once. wait_for_deliveries() is the
// barrier a flush needs in that mode.
#pragma once

#include <cupti.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "backends/backend.h"

namespace proton::cupti {

class BufferPool {
 public:
  struct Stats {
    size_t buffer_bytes = 0;
    size_t allocated = 0;  // buffers of the current size alive (free or lent to CUPTI)
    size_t free = 0;
    uint64_t declined = 0;  // requests refused at the cap
  };

  BufferPool() = default;
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  /// Sets the size of future buffers (rounded up to CUPTI's 8-byte record alignment) and the
  /// cap. Free buffers of another size are released now; lent ones when they come back.
  void configure(size_t buffer_bytes, size_t max_buffers);
  /// Allocates buffers until `count` exist (at most the cap), their pages written so they are
  /// resident now: a pool sized at start never grows mid-run from a burst of completions, which
  /// would step resident memory up by a buffer at a random point of the run.
  void reserve(size_t count);

  /// A buffer of `size` bytes, or nullptr (size 0) at the cap.
  uint8_t* acquire(size_t& size);
  /// Takes back a buffer `acquire` returned with that `size`.
  void release(uint8_t* buffer, size_t size);

  Stats stats() const;

 private:
  mutable std::mutex mu_;  // guards every field below; held for a few instructions
  size_t bytes_ = BackendOptions{}.buffer_bytes;  // until configure(): the backend's defaults
  size_t max_ = BackendOptions{}.max_buffers;
  std::vector<uint8_t*> free_;  // capacity reserved up to max_, so release never allocates
  size_t allocated_ = 0;
  uint64_t declined_ = 0;
};

/// Receives completed buffers. consume() runs on CUPTI's thread or a flushing thread, one call
/// at a time, and must not throw.
class BufferConsumer {
 public:
  virtual void consume(uint8_t* buffer, size_t valid_bytes) noexcept = 0;

 protected:
  ~BufferConsumer() = default;
};

/// Completed buffers go to the consumer on a worker thread (true) or inline (false, the
/// default). The worker starts on first use, once per process (again in a forked child).
void set_buffer_thread(bool on);

/// Returns once every buffer completed so far has been consumed (immediately when delivery is
/// inline), or false after `limit`: a flush must never hang the program.
bool wait_for_deliveries(std::chrono::milliseconds limit = std::chrono::seconds(30));

/// The process-wide pool (never destroyed: CUPTI may return buffers during exit).
BufferPool& buffer_pool();

/// Registers the consumer of completed buffers (nullptr: none; buffers are recycled unread).
/// Waits for the deliveries queued and in progress first, so the old consumer gets every
/// buffer completed before the change and may be destroyed after.
void set_buffer_consumer(BufferConsumer* consumer);

/// The callbacks passed to cuptiActivityRegisterCallbacks.
void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                  size_t size, size_t valid_bytes);

}  // namespace proton::cupti
