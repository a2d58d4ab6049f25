// The instrumentation runtime's counters, as proton.hooks.instrumentation.stats() reports them
// (docs/instrumentation.md says what each tells).
#pragma once

#include <cstdint>

namespace proton::instr {

struct InstrStats {
  uint64_t launches = 0;          // launches that got a slice of a pool
  uint64_t decoded = 0;           // launches decoded
  uint64_t overflows = 0;         // launches that got the discard slice (pool full)
  uint64_t largest_overflow = 0;  // the most bytes one of them asked for
  uint64_t paused = 0;            // launches while sessions were paused (discard slice)
  uint64_t unknown_kernels = 0;   // launches of kernels never registered (not decoded)
  uint64_t failed_launches = 0;   // launch calls that returned an error (nothing to decode)
  uint64_t copy_errors = 0;       // driver calls that failed (that launch's data is lost)
  uint64_t samples = 0;           // closed regions decoded
  uint64_t wrapped_units = 0;
  uint64_t overwritten_events = 0;
  uint64_t unmatched_events = 0;
  uint64_t corrupt_ctas = 0;
  uint64_t bytes_copied = 0;    // device-to-host bytes actually copied (written records only)
  uint64_t bytes_reserved = 0;  // profile-scratch bytes the launches were given
  uint64_t pool_bytes = 0;      // device bytes held by pools now
  uint64_t max_in_flight_bytes = 0;
  // Where the consumer's time goes (ns, summed): waiting for the copies, decoding, handing
  // regions to the sessions; and how long launches waited for a full pool.
  uint64_t batches = 0;
  uint64_t copy_wait_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t deliver_ns = 0;
  uint64_t full_wait_ns = 0;
  // Launches that took the mutex to wake the consumer (about one per batch at most: it
  // sleeps, the batch is full, or the pool is half full).
  uint64_t wakes = 0;
  uint64_t wake_ns = 0;  // what those launches spent on the mutex and the wake
  // Allocations that left the lock-free path (a pool's first launch, a full ring, a paused or
  // closing session) and their time in it, the mutex and any full-pool wait included.
  uint64_t slow_allocs = 0;
  uint64_t slow_alloc_ns = 0;
  // Pinned host staging the consumer (re)allocated, and its time in the driver doing so.
  uint64_t staging_allocs = 0;
  uint64_t staging_alloc_ns = 0;
  // Slices handed out whose launch never reached its exit within a full pool's wait (their
  // thread stuck in between; a thread that ends gives its slice back itself), given up so that
  // the ring goes on.
  uint64_t abandoned_slices = 0;
};

}  // namespace proton::instr
