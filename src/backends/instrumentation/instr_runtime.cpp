#include "backends/instrumentation/instr_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "backends/instrumentation/instr_runtime_parts.h"
#include "common/hot.h"

namespace proton::instr {

#ifndef PROTON_HAVE_CUPTI
std::unique_ptr<DeviceApi> make_device_api() {
  return nullptr;
}
#endif

namespace {

// The slice of the launch in flight on this thread, between alloc() and launch_exit().
thread_local struct {
  bool valid = false;
  void* pool = nullptr;
  uint64_t offset = 0;
  uint64_t bytes = 0;
} t_pending;

uint64_t default_pool_bytes() {
  if (const char* mb = std::getenv("PROTON_INSTR_POOL_MB")) {
    uint64_t v = std::strtoull(mb, nullptr, 10);
    if (v > 0) return v << 20;
  }
  // 64 MB: eight launches of a 1,024-CTA kernel in flight; the pinned twin counts in RSS.
  return uint64_t{64} << 20;
}

// A positive integer from the environment, clamped to [1, most]; `fallback` when unset or bad.
uint64_t env_count(const char* name, uint64_t fallback, uint64_t most) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  uint64_t n = std::strtoull(v, nullptr, 10);
  return n == 0 ? fallback : std::min(n, most);
}

}  // namespace

InstrRuntime::InstrRuntime()
    : gather_ms_(static_cast<int>(env_count("PROTON_INSTR_GATHER_MS", kGatherMs, 1000))),
      wake_batch_(env_count("PROTON_INSTR_WAKE_BATCH", kWakeBatch, kMaxBatch)) {}

InstrRuntime& InstrRuntime::get() {
  // Leaked on purpose: launches and the consumer may outlive static destruction order.
  static InstrRuntime* rt = new InstrRuntime();
  return *rt;
}

InstrRuntime::~InstrRuntime() = default;

void InstrRuntime::set_device_api(std::unique_ptr<DeviceApi> api) {
  // Tests swap devices between runs, with nothing in flight: what the old device made goes
  // back to it first.
  std::lock_guard lock(mu_);
  if (api_) {
    for (void* e : free_events_)
      api_->destroy_event(e);
    if (batch_event_ != nullptr) api_->destroy_event(batch_event_);
    for (void* e : stream_events_)
      api_->destroy_event(e);
    for (auto& copied : free_copied_)
      for (Staging* st : {&copied->header_stage, &copied->data_stage})
        if (st->data != nullptr) api_->free_pinned(st->data);
    for (uint64_t d : old_discards_)
      api_->free_device(d);
    if (discard_ != 0) api_->free_device(discard_);
    if (copy_stream_ != nullptr) api_->destroy_stream(copy_stream_);
  }
  old_discards_.clear();
  batch_event_ = nullptr;
  stream_events_.clear();
  free_copied_.clear();
  copies_made_ = 0;
  api_ = std::move(api);
  ++api_generation_;
  api_loaded_ = false;
  copy_stream_ = nullptr;
  free_events_.clear();
  discard_ = 0;
  discard_bytes_ = 0;
}

void InstrRuntime::set_sink(RegionSink* sink) {
  std::lock_guard lock(mu_);
  sink_ = sink;
}

bool InstrRuntime::ensure_device(std::string& why) {
  if (!api_) api_ = make_device_api();
  if (!api_) {
    why = "this build of proton has no GPU device API (built without CUDA headers)";
    return false;
  }
  if (!api_loaded_) {
    ++api_generation_;
    api_loaded_ = api_->load(api_why_);
    if (!api_loaded_) {
      why = api_why_;
      api_.reset();
      return false;
    }
  }
  return true;
}

void InstrRuntime::open(uint32_t session, uint64_t pool_bytes, uint64_t deliver_mask) {
  // The driver is loaded at the first launch: a session without a GPU still starts and keeps
  // its CPU-side data (kernels then cannot launch anyway).
  std::unique_lock lock(mu_);
  auto pool = std::make_unique<Pool>();
  pool->size = ((pool_bytes != 0 ? pool_bytes : default_pool_bytes()) + 127) & ~uint64_t{127};
  pool->deliver_mask = deliver_mask != 0 ? deliver_mask : uint64_t{1} << (session & 63u);
  pools_[session] = std::move(pool);
  if (!consumer_.joinable()) {
    stop_ = false;
    consumer_ = std::thread([this] { consume(); });
    decoder_ = std::thread([this] { decode_batches(); });
  }
}

void InstrRuntime::drain() {
  std::unique_lock lock(mu_);
  uint64_t target = queued_;
  ++urgent_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return finished_ >= target; });
  --urgent_;
}

void InstrRuntime::close(uint32_t session) {
  {
    // No new slices from this pool; launches already given one are queued before finalize
    // returns to the caller (one thread launches and finalizes in the usual case).
    std::lock_guard lock(mu_);
    auto it = pools_.find(session);
    if (it != pools_.end()) it->second->closing = true;
  }
  drain();
  std::unique_lock lock(mu_);
  auto it = pools_.find(session);
  if (it == pools_.end()) return;
  Pool& p = *it->second;
  if (p.device != 0) {
    api_->free_device(p.device);
    stats_.pool_bytes -= p.size;
  }
  pools_.erase(it);
}

void InstrRuntime::register_kernel(uint64_t function, KernelInfo info) {
  auto shared = std::make_shared<const KernelInfo>(std::move(info));
  std::lock_guard lock(mu_);
  kernels_[function] = std::move(shared);
}

bool InstrRuntime::ensure_pool(Pool& p) {
  if (p.device != 0) return true;
  if (p.failed) return false;
  if (!api_->capture_context()) {
    // No current context on this thread yet: this launch gets the discard slice (an overflow)
    // and the next launch tries again, instead of losing every launch of the session.
    if (errors_.size() < 8)
      errors_.push_back("no current GPU context at a launch; its regions are lost");
    return false;
  }
  if (copy_stream_ == nullptr) copy_stream_ = api_->create_stream();
  p.device = api_->alloc_device(p.size);
  if (p.device == 0 || copy_stream_ == nullptr) {
    if (p.device != 0) api_->free_device(p.device);
    p.device = 0;
    p.failed = true;
    if (errors_.size() < 8) {
      std::string why = api_->last_error();
      errors_.push_back("could not allocate the instrumentation pool" +
                        (why.empty() ? std::string() : ": " + why));
    }
    return false;
  }
  stats_.pool_bytes += p.size;
  return true;
}

uint64_t InstrRuntime::alloc(uint64_t bytes, uint64_t alignment, uint64_t stream) {
  (void)stream;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096)
    throw std::invalid_argument("profile scratch alignment must be a power of two <= 4096");
  const uint64_t need = (bytes + alignment - 1) / alignment * alignment;
  std::unique_lock lock(mu_);
  if (t_pending.valid) {
    // This thread's last slice never reached a launch's exit (the launch failed in Python
    // before the driver call, so no kernel writes it): give it back.
    if (Pool* old = live_pool(t_pending.pool)) old->give_back(t_pending.offset);
    t_pending.valid = false;
  }
  std::string why;
  if (!ensure_device(why)) throw std::runtime_error("backend='instrumentation': " + why);
  const bool via_callback = exit_via_callback_.load(std::memory_order_relaxed);
  const bool paused =
      via_callback && !hot::globals.launch_callbacks_on.load(std::memory_order_relaxed);
  Pool* pool = nullptr;
  for (auto& [id, p] : pools_) {  // the lowest open session's pool
    if (!p->closing && !paused) {
      pool = p.get();
      break;
    }
  }
  if (pool != nullptr && ensure_pool(*pool) && need <= pool->size) {
    // Read the clock only when the ring is full: no clock read on the usual launch.
    std::chrono::steady_clock::time_point deadline{};
    for (;;) {
      // Slices start at multiples of `alignment` from the pool's base (cuMemAlloc: 256-aligned)
      // and never straddle the ring's end.
      uint64_t head = (pool->head + alignment - 1) / alignment * alignment;
      uint64_t pos = head % pool->size;
      uint64_t start = pos + need <= pool->size ? head : head + (pool->size - pos);
      if (start + need - pool->tail <= pool->size) {
        t_pending = {true, pool, start, need};
        if (via_callback) hot::this_thread().instr_pending = true;
        pool->head = start + need;
        pool->inflight.push(start, start + need);
        stats_.max_in_flight_bytes = std::max(stats_.max_in_flight_bytes, pool->head - pool->tail);
        return pool->device + start % pool->size;
      }
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
      const Pool::Inflight::Slice* oldest = pool->inflight.oldest();
      if (timed_out && oldest != nullptr && !oldest->queued) {
        // The oldest slice out holds the tail and its launch never reached its exit. Seen so
        // for abandon_after_ms across full waits, its thread ended between the allocator and
        // the launch: give it up rather than stall every launch (the clock is read only here).
        const uint64_t offset = oldest->offset;
        const uint64_t now = now_ns();
        if (pool->stuck_offset != offset) {
          pool->stuck_offset = offset;
          pool->stuck_since_ns = now;
        } else if (now - pool->stuck_since_ns >= uint64_t{abandon_after_ms} * 1'000'000) {
          pool->give_back(offset);
          ++stats_.abandoned_slices;
          deadline = {};  // a fresh wait, should the ring still be full
          continue;
        }
      }
      if (timed_out) break;
    }
  }
  // Paused, no pool, or still full: a discard slice keeps the kernel safe; its records are
  // dropped (and counted).
  ++(paused ? stats_.paused : stats_.overflows);
  if (need > discard_bytes_) {
    if (discard_ != 0) old_discards_.push_back(discard_);
    api_->capture_context();
    discard_ = api_->alloc_device(need);
    discard_bytes_ = discard_ != 0 ? need : 0;
    if (discard_ == 0) throw std::runtime_error("backend='instrumentation': out of device memory");
  }
  t_pending = {true, nullptr, 0, need};
  return discard_;
}

InstrRuntime::Pool* InstrRuntime::live_pool(void* pool) {
  for (auto& entry : pools_)
    if (entry.second.get() == pool) return entry.second.get();
  return nullptr;
}

void InstrRuntime::note_copy_error(const char* stage) {
  // Never a silent loss: the first few failures are kept for stats()["errors"], with the
  // driver's error name, and the first one is said on stderr.
  std::string why = api_ ? api_->last_error() : std::string();
  std::string line = std::string("instrumentation copy-back failed at ") + stage +
                     (why.empty() ? std::string() : ": " + why) +
                     " (that launch's regions are lost)";
  if (copy_error_lines_.size() < 4) copy_error_lines_.push_back(line);
  if (!said_copy_error_) {
    said_copy_error_ = true;
    std::fprintf(stderr, "proton: %s\n", line.c_str());
  }
}

void* InstrRuntime::take_event() {
  if (!free_events_.empty()) {
    void* e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  return api_->create_event();
}

void InstrRuntime::launch_exit(uint64_t function, uint64_t stream, ContextId ctx, uint64_t sessions,
                               bool launched) {
  if (!t_pending.valid) return;  // not an instrumented launch
  t_pending.valid = false;
  if (t_pending.pool == nullptr) return;  // discard slice: already counted as an overflow
  std::lock_guard lock(mu_);
  Pool* live = live_pool(t_pending.pool);
  if (live == nullptr) return;  // its session closed in between: nothing to copy into
  if (Pool::Inflight::Slice* slice = live->inflight.find(t_pending.offset)) slice->queued = true;
  // Jobs are recycled by the consumer: no heap allocation per launch in steady state.
  std::unique_ptr<Job> job;
  if (!free_jobs_.empty()) {
    job = std::move(free_jobs_.back());
    free_jobs_.pop_back();
    *job = Job{};
  } else {
    job = std::make_unique<Job>();
  }
  job->pool = live;
  job->offset = t_pending.offset;
  job->bytes = t_pending.bytes;
  job->ctx = ctx;
  uint64_t open = 0;
  for (const auto& entry : pools_)
    open |= entry.second->deliver_mask;
  job->sessions = sessions & open;
  job->stream = stream;
  if (!launched) {
    // Queued all the same (the ring gives slices back in order), never copied or decoded.
    job->ok = false;
    job->launch_ok = false;
    ++stats_.failed_launches;
  } else {
    ++stats_.launches;
    stats_.bytes_reserved += job->bytes;
    job->function = function;
  }
  if (launched && stream == kPerThreadStream) {
    // Only this thread can name its per-thread stream: the one case with a driver call here.
    job->launched = take_event();
    job->ok = job->launched != nullptr && api_->record(job->launched, stream);
    if (!job->ok) {
      ++stats_.copy_errors;
      note_copy_error(job->launched == nullptr ? "event create (launching thread)"
                                               : "event record on the launch's stream");
    }
  }
  const Pool& pool = *job->pool;
  queue_.push_back(std::move(job));
  ++queued_;
  // Wake the consumer when a batch starts (it then gathers for gather_ms_), when the batch is
  // full, or when the pool runs short; once per wait of the consumer: every other launch
  // returns without a futex call (with the pool over half full, each launch used to make one
  // until the consumer ran).
  if (!consumer_signalled_ &&
      (queue_.size() == 1 || queue_.size() >= wake_batch_ || pool.over_half())) {
    consumer_signalled_ = true;
    work_cv_.notify_one();
  }
}

InstrStats InstrRuntime::stats() {
  std::lock_guard lock(mu_);
  return stats_;
}

std::vector<std::string> InstrRuntime::errors() {
  std::lock_guard lock(mu_);
  // Copy errors first, kept apart so decode errors cannot crowd them out.
  std::vector<std::string> out = copy_error_lines_;
  out.insert(out.end(), errors_.begin(), errors_.end());
  return out;
}

}  // namespace proton::instr
