#include "backends/instrumentation/instr_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/hot.h"

namespace proton::instr {

#ifndef PROTON_HAVE_CUPTI
std::unique_ptr<DeviceApi> make_device_api() {
  return nullptr;
}
#endif

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

namespace {

// The slice of the launch in flight on this thread, between alloc() and launch_exit().
thread_local struct {
  bool valid = false;
  void* pool = nullptr;
  uint64_t offset = 0;
  uint64_t end = 0;
  uint64_t bytes = 0;
} t_pending;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

uint64_t default_pool_bytes() {
  if (const char* mb = std::getenv("PROTON_INSTR_POOL_MB")) {
    uint64_t v = std::strtoull(mb, nullptr, 10);
    if (v > 0) return v << 20;
  }
  // 64 MB: eight launches of a 1,024-CTA kernel in flight; the pinned twin counts in RSS.
  return uint64_t{64} << 20;
}

}  // namespace

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
  t_pending.valid = false;
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
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(overflow_wait_ms);
    for (;;) {
      // Slices start at multiples of `alignment` from the pool's base (cuMemAlloc: 256-aligned)
      // and never straddle the ring's end.
      uint64_t head = (pool->head + alignment - 1) / alignment * alignment;
      uint64_t pos = head % pool->size;
      uint64_t start = pos + need <= pool->size ? head : head + (pool->size - pos);
      if (start + need - pool->tail <= pool->size) {
        t_pending = {true, pool, start, start + need, need};
        if (via_callback) hot::this_thread().instr_pending = true;
        pool->head = start + need;
        stats_.max_in_flight_bytes = std::max(stats_.max_in_flight_bytes, pool->head - pool->tail);
        return pool->device + start % pool->size;
      }
      // Full: the GPU is behind the host. Let the consumer free slices, up to a bound.
      ++urgent_;
      work_cv_.notify_all();
      const uint64_t waited_from = now_ns();
      const bool timed_out = done_cv_.wait_until(lock, deadline) == std::cv_status::timeout;
      stats_.full_wait_ns += now_ns() - waited_from;
      --urgent_;
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
  t_pending = {true, nullptr, 0, 0, need};
  return discard_;
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
  // Jobs are recycled by the consumer: no heap allocation per launch in steady state.
  std::unique_ptr<Job> job;
  if (!free_jobs_.empty()) {
    job = std::move(free_jobs_.back());
    free_jobs_.pop_back();
    *job = Job{};
  } else {
    job = std::make_unique<Job>();
  }
  job->pool = static_cast<Pool*>(t_pending.pool);
  job->offset = t_pending.offset;
  job->end = t_pending.end;
  job->bytes = t_pending.bytes;
  job->ctx = ctx;
  uint64_t open = 0;
  for (const auto& entry : pools_)
    open |= entry.second->deliver_mask;
  job->sessions = sessions & open;
  job->stream = stream;
  if (!launched) {
    // Queued all the same: the ring gives slices back in order.
    job->ok = false;
    job->launch_ok = false;
    ++stats_.failed_launches;
    queue_.push_back(std::move(job));
    ++queued_;
    if (queue_.size() == 1) work_cv_.notify_one();
    return;
  }
  ++stats_.launches;
  stats_.bytes_reserved += job->bytes;
  auto k = kernels_.find(function);
  if (k != kernels_.end()) job->kernel = k->second;
  if (stream == kPerThreadStream) {
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
  // Wake the consumer when a batch starts (it then gathers for kGatherMs), when the batch is
  // full, or when the pool runs short; every other launch returns without a futex call.
  if (queue_.size() == 1 || queue_.size() == kWakeBatch || 2 * (pool.head - pool.tail) > pool.size)
    work_cv_.notify_one();
}

void InstrRuntime::consume() {
  uint64_t generation = 0;  // of the device API whose context this thread has bound
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) return;
    // Gather: more launches come in the next moments; one batch copies them all.
    work_cv_.wait_for(lock, std::chrono::milliseconds(kGatherMs), [&] {
      return stop_ || urgent_ > 0 || queue_.size() >= kWakeBatch || pool_short();
    });
    // Everything queued so far is one batch: one wait per launch, one copy per contiguous run
    // of slices, one event to wait for. None of it runs on the launching thread.
    std::deque<std::unique_ptr<Job>> batch;
    if (queue_.size() <= kMaxBatch) {
      batch.swap(queue_);
    } else {
      for (size_t i = 0; i < kMaxBatch; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
    }
    const bool rebind = generation != api_generation_;  // first batch, or a new device API
    generation = api_generation_;
    lock.unlock();
    // The context first: an event made on this thread before it is bound belongs to no context
    // (CUDA_ERROR_INVALID_CONTEXT), which lost the whole first batch on the H100.
    if (rebind) api_->bind_context();
    lock.lock();
    if (batch_event_ == nullptr) batch_event_ = api_->create_event();
    void* copied = batch_event_;
    // Staging to copy into: one the decoder is done with, or a new one (up to kCopies).
    copied_cv_.wait(lock, [&] { return !free_copied_.empty() || copies_made_ < kCopies; });
    std::unique_ptr<Copied> c;
    if (!free_copied_.empty()) {
      c = std::move(free_copied_.back());
      free_copied_.pop_back();
    } else {
      c = std::make_unique<Copied>();
      ++copies_made_;
    }
    lock.unlock();
    c->jobs = std::move(batch);
    const uint64_t t0 = now_ns();
    copy_back(*c, copied);
    const uint64_t t1 = now_ns();
    lock.lock();
    ++stats_.batches;
    stats_.copy_wait_ns += t1 - t0;
    // The slices are back on the host (or lost, and counted): the ring can hand them out again
    // while the decoder works on the copies.
    for (auto& job : c->jobs)
      job->pool->tail = std::max(job->pool->tail, job->end);
    done_cv_.notify_all();
    decode_queue_.push_back(std::move(c));
    decode_cv_.notify_one();
  }
}

void InstrRuntime::decode_batches() {
  std::unique_lock lock(mu_);
  for (;;) {
    decode_cv_.wait(lock, [&] { return !decode_queue_.empty(); });
    std::unique_ptr<Copied> c = std::move(decode_queue_.front());
    decode_queue_.pop_front();
    lock.unlock();
    const uint64_t t0 = now_ns();
    uint64_t deliver = 0;
    for (auto& job : c->jobs)
      deliver += finish(*job, *c);
    const uint64_t t1 = now_ns();
    lock.lock();
    stats_.decode_ns += t1 - t0 - deliver;
    stats_.deliver_ns += deliver;
    for (auto& job : c->jobs) {
      if (job->launched) free_events_.push_back(job->launched);
      job->kernel.reset();
      free_jobs_.push_back(std::move(job));
    }
    finished_ += c->jobs.size();
    c->jobs.clear();
    free_copied_.push_back(std::move(c));
    copied_cv_.notify_one();
    done_cv_.notify_all();
  }
}

bool InstrRuntime::pool_short() const {
  for (const auto& entry : pools_) {
    const Pool& p = *entry.second;
    if (2 * (p.head - p.tail) > p.size) return true;
  }
  return false;
}

void InstrRuntime::order_after_launches(std::deque<std::unique_ptr<Job>>& batch,
                                        const char*& failed) {
  // Our copy stream waits for every launch of the batch. A job is queued after its launch call
  // returned, so an event recorded now on its stream completes after its kernel: one event per
  // stream covers all of the batch's launches on it.
  batch_streams_.clear();
  for (auto& job : batch) {
    if (!job->ok) continue;
    if (job->launched != nullptr) {
      job->ok = api_->wait(copy_stream_, job->launched);
      if (!job->ok && failed == nullptr) failed = "stream wait for the launch";
    } else if (std::find(batch_streams_.begin(), batch_streams_.end(), job->stream) ==
               batch_streams_.end()) {
      batch_streams_.push_back(job->stream);
    }
  }
  while (stream_events_.size() < batch_streams_.size()) {
    void* e = api_->create_event();
    if (e == nullptr) break;
    stream_events_.push_back(e);
  }
  for (size_t i = 0; i < batch_streams_.size(); ++i) {
    const uint64_t stream = batch_streams_[i];
    const char* why = nullptr;
    if (i >= stream_events_.size()) {
      why = "event create (consumer thread)";
    } else if (!api_->record(stream_events_[i], stream)) {
      why = "event record on the launch's stream";
    } else if (!api_->wait(copy_stream_, stream_events_[i])) {
      why = "stream wait for the launch";
    }
    if (why == nullptr) continue;
    if (failed == nullptr) failed = why;
    for (auto& job : batch)
      if (job->launched == nullptr && job->stream == stream) job->ok = false;
  }
}

void InstrRuntime::plan_runs(Copied& c) {
  // Launches of one kernel handed out in a row sit next to each other in the ring unless it
  // wrapped: their CTA slices form one run, copied with one strided copy per round.
  c.runs.clear();
  c.run_kernels.clear();
  size_t header_at = 0;
  for (auto& job : c.jobs) {
    job->run = SIZE_MAX;
    if (!job->ok || !job->kernel || job->pool == nullptr) continue;
    const KernelLayout& layout = job->kernel->layout;
    const uint32_t slice = layout.scratch_bytes;
    const uint32_t header = kHeaderFixedBytes + 4 * layout.num_warps;
    job->rows = slice >= header ? job->bytes / slice : 0;
    if (job->rows == 0) continue;  // the decoder reports a slice too small for its header
    const uint64_t device = job->pool->device + job->offset % job->pool->size;
    if (!c.runs.empty() && c.run_kernels.back() == job->kernel.get() &&
        c.runs.back().device + c.runs.back().rows * slice == device) {
      job->run = c.runs.size() - 1;
      job->row = c.runs.back().rows;
      c.runs.back().rows += job->rows;
      header_at += job->rows * header;
      continue;
    }
    SliceRun run;
    run.device = device;
    run.rows = job->rows;
    run.slice = slice;
    run.header = header;
    run.data_offset = data_offset_for(layout, 0);
    run.units = static_cast<uint32_t>(profiled_units(layout).size());
    run.segments = segment_count(layout, run.units);
    run.header_at = header_at;
    header_at += job->rows * header;
    job->run = c.runs.size();
    job->row = 0;
    c.runs.push_back(run);
    c.run_kernels.push_back(job->kernel.get());
  }
}

bool InstrRuntime::stage(Staging& s, size_t bytes) {
  if (bytes <= s.bytes) return true;
  if (s.data != nullptr) api_->free_pinned(s.data);
  size_t want = std::max<size_t>({bytes, s.bytes * 2, size_t{1} << 20});
  s.data = static_cast<uint8_t*>(api_->alloc_pinned(want));
  s.bytes = s.data != nullptr ? want : 0;
  return s.data != nullptr;
}

void InstrRuntime::copy_back(Copied& c, void* copied) {
  auto& batch = c.jobs;
  const char* failed = nullptr;  // the first stage that failed, for the error line
  bool ok = copied != nullptr;
  if (!ok) failed = "event create (consumer thread)";
  if (ok) order_after_launches(batch, failed);
  plan_runs(c);
  auto fail_run = [&](size_t r, const char* stage_name) {
    if (failed == nullptr) failed = stage_name;
    for (auto& job : batch)
      if (job->run == r) job->ok = false;
  };
  auto wait_copies = [&](const char* what) {
    if (!api_->record(copied, reinterpret_cast<uint64_t>(copy_stream_))) {
      if (failed == nullptr) failed = "event record after the copies";
      return false;
    }
    if (!api_->synchronize(copied)) {
      if (failed == nullptr) failed = what;
      return false;
    }
    return true;
  };
  uint64_t copied_bytes = 0;
  if (ok && !c.runs.empty()) {
    // Round 1: every CTA's header (with its per-warp word counts).
    const SliceRun& last = c.runs.back();
    if (!stage(c.header_stage, last.header_at + last.rows * last.header)) {
      ok = false;
      if (failed == nullptr) failed = "pinned staging allocation";
    }
    for (size_t r = 0; ok && r < c.runs.size(); ++r) {
      const SliceRun& run = c.runs[r];
      if (!api_->copy_2d_to_host_async(c.header_stage.data + run.header_at, run.header, run.device,
                                       run.slice, run.header, run.rows, copy_stream_)) {
        fail_run(r, "device-to-host copy");
      } else {
        copied_bytes += run.rows * run.header;
      }
    }
    ok = ok && wait_copies("event synchronize");
  }
  if (ok && !c.runs.empty()) {
    // Round 2: the written part of every segment, into compact rows after their headers.
    size_t data_at = 0;
    for (size_t r = 0; r < c.runs.size(); ++r) {
      SliceRun& run = c.runs[r];
      std::vector<uint32_t> units = profiled_units(c.run_kernels[r]->layout);
      plan_unit_bytes(run, {c.header_stage.data + run.header_at, run.rows * run.header}, units);
      run.data_at = data_at;
      data_at += run.rows * run.compact_bytes();
    }
    if (!stage(c.data_stage, data_at)) {
      ok = false;
      if (failed == nullptr) failed = "pinned staging allocation";
    }
    for (size_t r = 0; ok && r < c.runs.size(); ++r) {
      const SliceRun& run = c.runs[r];
      write_compact_headers(run, {c.header_stage.data + run.header_at, run.rows * run.header},
                            {c.data_stage.data + run.data_at, run.rows * run.compact_bytes()});
      if (run.unit_bytes == 0) continue;  // no row the plan could read: nothing to copy
      for (uint32_t u = 0; u < run.units; ++u) {
        if (!api_->copy_2d_to_host_async(
                c.data_stage.data + run.data_at + run.header + size_t{u} * run.unit_bytes,
                run.compact_bytes(), run.device + run.data_offset + uint64_t{u} * run.segment,
                run.slice, run.unit_bytes, run.rows, copy_stream_)) {
          fail_run(r, "device-to-host copy");
          break;
        }
        copied_bytes += run.rows * run.unit_bytes;
      }
    }
    ok = ok && wait_copies("event synchronize");
  }
  if (!ok)
    for (auto& job : batch)
      job->ok = false;
  std::lock_guard lock(mu_);
  stats_.bytes_copied += copied_bytes;
  if (failed != nullptr) note_copy_error(failed);
}

uint64_t InstrRuntime::finish(Job& job, const Copied& c) {
  // Runs on the decoder thread without mu_, on the batch's host staging (the device slices may
  // already be handed out again).
  if (!job.launch_ok) return 0;  // counted at the launch
  if (!job.ok) {
    std::lock_guard lock(mu_);
    ++stats_.copy_errors;
    return 0;
  }
  if (!job.kernel) {
    std::lock_guard lock(mu_);
    ++stats_.unknown_kernels;
    return 0;
  }
  const KernelInfo& k = *job.kernel;
  DecodeResult r;
  if (job.run < c.runs.size()) {
    const SliceRun& run = c.runs[job.run];
    const size_t row_bytes = run.compact_bytes();
    r = decode_scratch(
        {c.data_stage.data + run.data_at + job.row * row_bytes, job.rows * row_bytes},
        compact_layout(k.layout, run));
  } else {
    // A slice smaller than one CTA's header: the decoder says so.
    r = decode_scratch({}, k.layout);
  }
  RegionSink* sink;
  {
    std::lock_guard lock(mu_);
    ++stats_.decoded;
    stats_.samples += r.samples.size();
    stats_.wrapped_units += r.wrapped_units;
    stats_.overwritten_events += r.overwritten_events;
    stats_.unmatched_events += r.unmatched_events;
    stats_.corrupt_ctas += r.corrupt_ctas;
    for (auto& e : r.errors)
      if (errors_.size() < 8) errors_.push_back(e);
    sink = sink_;
  }
  if (sink == nullptr) return 0;
  const uint64_t t0 = now_ns();
  sink->deliver(job.sessions, job.ctx, k, r, api_->device_id(), api_->sm_clock_khz());
  return now_ns() - t0;
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
