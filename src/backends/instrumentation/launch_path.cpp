// The launching thread's side of the instrumentation runtime: the profile allocator Triton's
// launcher calls, and the launch's exit that queues its record for the consumer. The usual
// launch takes no lock: a compare-and-swap on the ring's head, a record into the thread's own
// queue, and a wake of the consumer once per batch. The consumer side is consumer.cpp and
// decoders.cpp.
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "backends/instrumentation/instr_runtime.h"
#include "backends/instrumentation/instr_runtime_parts.h"
#include "common/hot.h"

namespace proton::instr {

namespace {
thread_local ThreadSide t_side;
}  // namespace

ThreadSide& thread_side() {
  return t_side;
}

ThreadSide::~ThreadSide() {
  if (valid) InstrRuntime::give_back_unlaunched(*this);
  if (queue) queue->writer_gone.store(true, std::memory_order_release);
}

void InstrRuntime::give_back_unlaunched(ThreadSide& t) {
  // No kernel of this slice ran: its launch failed in Python before the driver, or its thread
  // ended in between.
  auto* pool = static_cast<Pool*>(t.pool);
  t.valid = false;
  if (pool == nullptr) return;  // the discard slice
  pool->ring.give_back(t.slice.key);
  pool->users.fetch_sub(1, std::memory_order_release);
}

uint64_t InstrRuntime::alloc(uint64_t bytes, uint64_t alignment, uint64_t stream) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
    throw std::invalid_argument("profile scratch alignment must be a power of two <= 4096");
  ThreadSide& t = t_side;
  if (t.valid) give_back_unlaunched(t);
  t.captured = nullptr;
  const bool via_callback = exit_via_callback_.load(std::memory_order_relaxed);
  const bool paused =
      via_callback && !hot::globals.launch_callbacks_on.load(std::memory_order_relaxed);
  // A launch on a stream other than the legacy default one may be captured into a CUDA graph
  // (graph_capture.cpp): one driver query, no lock, unless it is.
  if (stream != 0) {
    if (DeviceApi* api = capture_api_.load(std::memory_order_acquire);
        api != nullptr && api->is_capturing(stream)) {
      std::lock_guard lock(mu_);
      if (api_.get() == api)
        return alloc_captured((bytes + alignment - 1) / alignment * alignment, paused,
                              via_callback);
    }
  }
  if (!paused) {
    if (Pool* p = active_.load(std::memory_order_acquire)) {
      // One device per pool: a launch from another GPU context (another device) must not be
      // handed this device's memory, which its kernel could not write.
      if (const uint64_t ctx = other_context(*p)) {
        std::lock_guard lock(mu_);
        return other_context_slice((bytes + alignment - 1) / alignment * alignment, ctx);
      }
      // Announce the slice before looking again: close() switches active_ first and then waits
      // for users to fall to zero, so one of the two sees the other.
      p->users.fetch_add(1, std::memory_order_seq_cst);
      SliceRing::Slice slice;
      if (active_.load(std::memory_order_seq_cst) == p && p->ring.reserve(bytes, alignment, slice))
        return hand_out(*p, slice, bytes, via_callback);
      p->users.fetch_sub(1, std::memory_order_release);
    }
  }
  return alloc_slow(bytes, alignment, stream, paused, via_callback);
}

uint64_t InstrRuntime::hand_out(Pool& pool, const SliceRing::Slice& slice, uint64_t bytes,
                                bool via_callback) {
  // Until the launch's exit: the slice (and a user of the pool) on this thread.
  ThreadSide& t = t_side;
  t.valid = true;
  t.pool = &pool;
  t.slice = slice;
  t.bytes = bytes;
  t.in_flight = pool.ring.in_flight();
  if (via_callback) hot::this_thread().exit_work |= hot::kExitInstr;
  return pool.device + slice.start % pool.size();
}

uint64_t InstrRuntime::alloc_slow(uint64_t bytes, uint64_t alignment, uint64_t stream, bool paused,
                                  bool via_callback) {
  const uint64_t need = (bytes + alignment - 1) / alignment * alignment;
  const uint64_t entered = now_ns();
  std::unique_lock lock(mu_);
  struct Account {  // counted on every way out, the lock still held
    InstrStats& s;
    uint64_t entered;
    ~Account() {
      ++s.slow_allocs;
      s.slow_alloc_ns += now_ns() - entered;
    }
  } account{stats_, entered};
  std::string why;
  if (!ensure_device(why)) throw std::runtime_error("backend='instrumentation': " + why);
  // The process's first launch may be a captured one: nothing below may allocate for it.
  if (capturing(stream)) return alloc_captured(need, paused, via_callback);
  Pool* pool = paused ? nullptr : lowest_open_pool();
  const bool ready = pool != nullptr && ensure_pool(*pool);
  if (ready) {  // one device per pool, as on the lock-free path
    if (const uint64_t ctx = other_context(*pool)) return other_context_slice(need, ctx);
  }
  if (ready && need <= pool->size()) {
    // Held while this thread waits without the lock, so close() keeps the pool.
    pool->users.fetch_add(1, std::memory_order_seq_cst);
    // Read the clock only when the ring is full: no clock read on the usual launch.
    std::chrono::steady_clock::time_point deadline{};
    for (;;) {
      SliceRing::Slice slice;
      if (pool->ring.reserve(bytes, alignment, slice))
        return hand_out(*pool, slice, bytes, via_callback);
      if (pool->closing) break;
      // Full: the GPU is behind the host. Let the consumer free slices, up to a bound.
      if (deadline == std::chrono::steady_clock::time_point{}) {
        deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(overflow_wait_ms);
      }
      ++urgent_;
      work_cv_.notify_all();
      const uint64_t waited_from = now_ns();
      const bool timed_out = done_cv_.wait_until(lock, deadline) == std::cv_status::timeout;
      stats_.full_wait_ns += now_ns() - waited_from;
      --urgent_;
      uint64_t oldest = 0;
      bool queued = true;
      if (timed_out && pool->ring.oldest(oldest, queued) && !queued) {
        // The oldest slice out holds the tail and its launch never reached its exit. Seen so
        // for abandon_after_ms across full waits, its thread is stuck between the allocator
        // and the launch: give it up rather than stall every launch (the clock is read only
        // here). Its launch, should it come, is dropped (mark_queued fails).
        const uint64_t now = now_ns();
        if (pool->stuck_key != oldest) {
          pool->stuck_key = oldest;
          pool->stuck_since_ns = now;
        } else if (now - pool->stuck_since_ns >= uint64_t{abandon_after_ms} * 1'000'000) {
          if (pool->ring.give_up(oldest)) ++stats_.abandoned_slices;
          deadline = {};  // a fresh wait, should the ring still be full
          continue;
        }
      }
      if (timed_out) break;
    }
    pool->users.fetch_sub(1, std::memory_order_release);
  }
  return discard_slice(need, paused);
}

uint64_t InstrRuntime::discard_slice(uint64_t need, bool paused) {
  // Paused, no pool, or still full: a discard slice keeps the kernel safe; its records are
  // dropped (and counted).
  ++(paused ? stats_.paused : stats_.overflows);
  if (!paused) stats_.largest_overflow = std::max(stats_.largest_overflow, need);
  return discard_buffer(need, api_->current_context(), /*capture=*/true);
}

uint64_t InstrRuntime::other_context(const Pool& pool) const {
  if (pool.ctx == 0) return 0;
  const uint64_t ctx = api_->current_context();
  return ctx != 0 && ctx != pool.ctx ? ctx : 0;
}

uint64_t InstrRuntime::other_context_slice(uint64_t need, uint64_t ctx) {
  ++stats_.other_context_launches;
  if (stats_.other_context_launches == 1 && errors_.size() < 8)
    errors_.push_back(
        "instrumented launches on another GPU than the session's pool (one device per "
        "process): their regions are not recorded");
  // Not captured: the pool's context stays the one the consumer and the deliveries use.
  return discard_buffer(need, ctx, /*capture=*/false);
}

uint64_t InstrRuntime::discard_buffer(uint64_t need, uint64_t ctx, bool capture) {
  auto it = std::find_if(discards_.begin(), discards_.end(),
                         [&](const ContextDiscard& d) { return d.ctx == ctx; });
  if (it == discards_.end() || it->bytes < need) {
    if (capture) api_->capture_context();
    // cuMemAlloc works in the calling thread's context: the launching one, its device.
    const uint64_t device = api_->alloc_device(need);
    if (device == 0) throw std::runtime_error("backend='instrumentation': out of device memory");
    if (it == discards_.end()) {
      it = discards_.insert(discards_.end(), ContextDiscard{ctx, 0, 0});
    } else {
      old_discards_.push_back(it->device);  // a kernel may still write it
    }
    it->device = device;
    it->bytes = need;
  }
  ThreadSide& t = t_side;
  t.valid = true;
  t.pool = nullptr;  // the exit queues nothing
  return it->device;
}

LaunchQueue& InstrRuntime::thread_queue() {
  ThreadSide& t = t_side;
  if (!t.queue) {
    t.queue = std::make_shared<LaunchQueue>();
    std::lock_guard lock(mu_);
    queues_.push_back(t.queue);
  }
  return *t.queue;
}

void InstrRuntime::launch_exit(uint64_t function, uint64_t stream, ContextId ctx, uint64_t sessions,
                               bool launched) {
  ThreadSide& t = t_side;
  if (!t.valid) return;  // not an instrumented launch
  t.valid = false;
  if (t.captured != nullptr) {
    auto* captured = static_cast<Captured*>(t.captured);
    t.captured = nullptr;
    captured_exit(*captured, function, stream, ctx, sessions, launched);
    return;
  }
  auto* pool = static_cast<Pool*>(t.pool);
  if (pool == nullptr) return;  // discard slice: already counted as an overflow
  if (!pool->ring.mark_queued(t.slice.key)) {
    // Given up while this launch was on its way (a full ring's wait took it for a dead
    // thread's): its slice may be another launch's now. Counted in abandoned_slices.
    pool->users.fetch_sub(1, std::memory_order_release);
    return;
  }
  LaunchRecord r;
  r.pool = pool;
  r.key = t.slice.key;
  r.start = t.slice.start;
  r.bytes = t.bytes;
  r.function = launched ? function : 0;
  r.stream = stream;
  r.sessions = sessions & open_mask_.load(std::memory_order_relaxed);
  r.in_flight = t.in_flight;
  r.ctx = ctx;
  r.launch_ok = launched;
  if (launched && stream == kPerThreadStream) {
    // Only this thread can name its per-thread stream: the one case with a driver call (and
    // the lock) here.
    std::lock_guard lock(mu_);
    r.launched = take_event();
    r.event_ok = r.launched != nullptr && api_->record(r.launched, stream);
    // Counted once, by the decoder that skips the launch (copy_errors is per lost launch);
    // named here, where the driver's error is known.
    if (!r.event_ok)
      note_copy_error(r.launched == nullptr ? "event create (launching thread)"
                                            : "event record on the launch's stream");
  }
  LaunchQueue& q = thread_queue();
  while (!q.push(r)) {
    // The consumer is kSlots records behind this thread: wait for it to take some.
    std::unique_lock lock(mu_);
    ++urgent_;
    work_cv_.notify_all();
    done_cv_.wait_for(lock, std::chrono::milliseconds(10));
    --urgent_;
  }
  // The next launch's lines, asked for now: it writes them without waiting for them.
  q.prepare_next();
  pool->ring.prepare_next();
  // The record holds the pool open from here (close() drains it before freeing the pool).
  pool->users.fetch_sub(1, std::memory_order_release);
  // Wake the consumer when it sleeps with nothing queued (it then gathers and looks at the
  // queues and the pool by itself), or when the pool is three quarters full; once per look of
  // the consumer: every other launch returns without touching the mutex or making a futex call.
  if ((idle_.load(std::memory_order_seq_cst) || pool->ring.over_three_quarters()) &&
      !signalled_.load(std::memory_order_seq_cst) &&
      !signalled_.exchange(true, std::memory_order_seq_cst)) {
    // Never wait for the mutex here: a decoder finishing a batch or the consumer taking one
    // holds it for tens of microseconds, and a launch that waited for it was the launching
    // thread's one futex wait (~0.2 us a launch on average in a 1,000-launch loop). Held by
    // another thread, the wake is left to the next launch (the flag goes down again), and the
    // consumer's idle wait looks by itself every kIdleLookMs.
    const uint64_t t0 = now_ns();
    std::unique_lock lock(mu_, std::try_to_lock);
    if (lock.owns_lock()) {
      work_cv_.notify_one();
      ++stats_.wakes;
      stats_.wake_ns += now_ns() - t0;
    } else {
      signalled_.store(false, std::memory_order_seq_cst);
      deferred_wakes_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

}  // namespace proton::instr
