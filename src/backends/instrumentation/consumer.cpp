// The consumer thread of the instrumentation runtime: gathers queued launches into a batch,
// orders our copy stream after them, copies back what the warps wrote into the pinned staging,
// frees the ring's slices and queues the batch for the decoders (decoders.cpp). The launch side
// is launch_path.cpp.
#include <algorithm>

#include "backends/instrumentation/instr_runtime_parts.h"

namespace proton::instr {

void InstrRuntime::consume() {
  uint64_t generation = 0;  // of the device API whose context this thread has bound
  std::unique_lock lock(mu_);
  for (;;) {
    // Said before looking (seq_cst, as the launches' record and their look at the flag): a
    // launch either sees the flag down and wakes this wait, or its record is seen here.
    idle_.store(true, std::memory_order_seq_cst);
    signalled_.store(false, std::memory_order_seq_cst);
    // Bounded while a session runs: a launch that found mu_ held left its wake to the next
    // launch, and a burst's last launch has none. With no session, no launch queues a record.
    const auto any = [&] { return stop_ || records_waiting() > 0; };
    if (pools_.empty()) {
      work_cv_.wait(lock, any);
    } else if (!work_cv_.wait_for(lock, std::chrono::milliseconds(kIdleLookMs), any)) {
      continue;
    }
    idle_.store(false, std::memory_order_relaxed);
    if (stop_ && records_waiting() == 0) return;
    // Gather: more launches come in the next moments; one batch copies them all. This thread
    // looks every kGatherLookUs whether the batch is full or the pool half full: a launch that
    // woke it instead paid a futex wake (an interrupt to this thread's CPU, 10-30 us on a
    // virtual machine) once per batch. A launch still wakes it when the pool is three quarters
    // full, as do drain() and a full pool (urgent_).
    signalled_.store(false, std::memory_order_seq_cst);
    const auto gathered = std::chrono::steady_clock::now() + std::chrono::milliseconds(gather_ms_);
    for (;;) {
      if (stop_ || urgent_ > 0 || records_waiting() >= wake_batch_ || pool_short()) break;
      const auto now = std::chrono::steady_clock::now();
      if (now >= gathered) break;
      work_cv_.wait_until(lock, std::min(gathered, now + std::chrono::microseconds(kGatherLookUs)));
    }
    // What the queues hold now is one batch: one wait per launch stream, one copy per
    // contiguous run of slices, one event to wait for. None of it runs on a launching thread.
    std::deque<std::unique_ptr<Job>> batch;
    for (const auto& q : queues_) {
      q->take(kMaxBatch - batch.size(), [&](const LaunchRecord& r) {
        std::unique_ptr<Job> job = reuse_or_make(free_jobs_);
        *job = Job{};
        job->pool = static_cast<Pool*>(r.pool);
        job->queue = q.get();
        job->key = r.key;
        job->offset = r.start;
        job->bytes = r.bytes;
        job->function = r.function;
        job->ctx = r.ctx;
        job->sessions = r.sessions;
        job->stream = r.stream;
        job->launched = r.launched;
        job->launch_ok = r.launch_ok;
        job->ok = r.launch_ok && r.event_ok;
        if (r.launch_ok) {
          ++stats_.launches;
          stats_.bytes_reserved += r.bytes;
          stats_.max_in_flight_bytes = std::max(stats_.max_in_flight_bytes, r.in_flight);
          auto k = kernels_.find(r.function);
          if (r.function != 0 && k != kernels_.end()) job->kernel = k->second;
        } else {
          ++stats_.failed_launches;  // queued all the same (the ring gives back in order)
        }
        batch.push_back(std::move(job));
      });
      if (batch.size() >= kMaxBatch) break;
    }
    if (batch.empty()) continue;
    const bool rebind = generation != api_generation_;  // first batch, or a new device API
    generation = api_generation_;
    lock.unlock();
    // The context first: an event made on this thread before it is bound belongs to no context
    // (CUDA_ERROR_INVALID_CONTEXT), which lost the whole first batch on the H100.
    // Relaxed capture mode: its waits and copies neither fail nor invalidate a program's
    // global-mode capture on another thread.
    if (rebind) {
      api_->bind_context();
      api_->relax_capture_mode();
    }
    lock.lock();
    if (batch_event_ == nullptr) batch_event_ = api_->create_event();
    void* copied = batch_event_;
    // Staging to copy into: one the decoder is done with, or a new one (up to kCopies).
    copied_cv_.wait(lock, [&] { return !free_copied_.empty() || copies_made_ < kCopies; });
    if (free_copied_.empty()) ++copies_made_;
    std::unique_ptr<Copied> c = reuse_or_make(free_copied_);
    lock.unlock();
    c->jobs = std::move(batch);
    const uint64_t t0 = now_ns();
    copy_back(*c, copied);
    const uint64_t t1 = now_ns();
    // The slices are back on the host (or lost, and counted): the ring can hand them out again
    // while the decoder works on the copies.
    uint64_t work = 0;
    for (auto& job : c->jobs) {
      job->pool->ring.give_back(job->key);
      if (job->ok && job->run < c->runs.size())
        job->work = job->rows * c->runs[job->run].compact_bytes();
      work += job->work;
    }
    c->next = 0;
    c->working = 0;
    lock.lock();
    unclaimed_bytes_ += work;
    ++stats_.batches;
    stats_.copy_wait_ns += t1 - t0;
    done_cv_.notify_all();
    decode_queue_.push_back(std::move(c));
    for (size_t i = 0; i < decoder_threads; ++i)
      if (may_decode(i)) decode_cvs_[i].notify_one();
  }
}

bool InstrRuntime::pool_short() const {
  for (const auto& entry : pools_)
    if (entry.second->ring.over_half()) return true;
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
  // Streams whose launches ran before a capture began on them: an event recorded there now
  // would join our copy stream to the capture, so the context is waited for instead (rare).
  std::vector<uint64_t> capturing_streams;
  for (size_t i = 0; i < batch_streams_.size(); ++i) {
    const uint64_t stream = batch_streams_[i];
    const char* why = nullptr;
    if (stream != 0 && api_->is_capturing(stream)) {
      capturing_streams.push_back(stream);
      continue;
    }
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
  if (!capturing_streams.empty()) {
    ++capture_syncs_;
    if (!api_->synchronize_context()) {
      if (failed == nullptr) failed = "context synchronize (a launch stream began a capture)";
      for (auto& job : batch)
        if (job->launched == nullptr &&
            std::find(capturing_streams.begin(), capturing_streams.end(), job->stream) !=
                capturing_streams.end())
          job->ok = false;
    }
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
    const uint64_t device = job->pool->device + job->offset % job->pool->size();
    if (!c.runs.empty() && c.run_kernels.back() == job->kernel.get() &&
        c.runs.back().device + c.runs.back().rows * slice == device) {
      job->run = c.runs.size() - 1;
      job->row = c.runs.back().rows;
      c.runs.back().rows += job->rows;
      header_at += job->rows * header;
      continue;
    }
    SliceRun run = slice_run(layout, device, job->rows);
    run.header_at = header_at;
    header_at += job->rows * header;
    job->run = c.runs.size();
    job->row = 0;
    c.runs.push_back(run);
    c.run_kernels.push_back(job->kernel.get());
  }
}

uint8_t* InstrRuntime::take_staging(Copied& c, size_t bytes) {
  std::unique_lock lock(mu_);
  for (;;) {
    if (uint8_t* p = arena_.take(bytes)) {
      c.held += StagingArena::rounded(bytes);
      return p;
    }
    // No room: other batches hold it until decoded (they give it back and notify) ...
    const size_t mine = c.held;
    if (arena_.base() != nullptr && arena_.in_use() > mine) {
      copied_cv_.wait(lock);
      continue;
    }
    // ... or the arena is too small even for this batch alone (or was never pinned): a larger
    // one (rare; pinning takes the driver for milliseconds, so not under mu_). This batch's
    // headers stay in the retired buffer.
    size_t want = std::max(arena_.size() * 2, 2 * (bytes + mine) + StagingArena::kAlign);
    if (arena_.base() == nullptr) want = std::max(want, staging_first_bytes);
    lock.unlock();
    const uint64_t t0 = now_ns();
    auto* fresh = static_cast<uint8_t*>(api_->alloc_pinned(want));
    lock.lock();
    if (!replace_arena(fresh, want, t0)) return nullptr;
    c.held = 0;
  }
}

bool InstrRuntime::replace_arena(uint8_t* fresh, size_t bytes, uint64_t pinning_since_ns) {
  ++stats_.staging_allocs;
  stats_.staging_alloc_ns += now_ns() - pinning_since_ns;
  if (fresh == nullptr) return false;
  // The old buffer may still hold ranges of batches in flight: freed when no session runs.
  if (arena_.base() != nullptr) retired_pinned_.push_back(arena_.base());
  arena_.reset(fresh, bytes);
  return true;
}

void InstrRuntime::give_staging(Copied& c) {
  for (uint8_t** p : {&c.headers, &c.data}) {
    if (*p != nullptr) arena_.give(*p);  // a range of a retired arena is simply forgotten
    *p = nullptr;
  }
  c.held = 0;
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
    c.headers = take_staging(c, last.header_at + last.rows * last.header);
    if (c.headers == nullptr) {
      ok = false;
      if (failed == nullptr) failed = "pinned staging allocation";
    }
    for (size_t r = 0; ok && r < c.runs.size(); ++r) {
      const SliceRun& run = c.runs[r];
      if (!api_->copy_2d_to_host_async(c.headers + run.header_at, run.header, run.device, run.slice,
                                       run.header, run.rows, copy_stream_)) {
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
      plan_unit_bytes(run, {c.headers + run.header_at, run.rows * run.header}, units);
      run.data_at = data_at;
      data_at += run.rows * run.compact_bytes();
    }
    c.data = take_staging(c, data_at);
    if (c.data == nullptr) {
      ok = false;
      if (failed == nullptr) failed = "pinned staging allocation";
    }
    for (size_t r = 0; ok && r < c.runs.size(); ++r) {
      const SliceRun& run = c.runs[r];
      write_compact_headers(run, {c.headers + run.header_at, run.rows * run.header},
                            {c.data + run.data_at, run.rows * run.compact_bytes()});
      if (run.unit_bytes == 0) continue;  // no row the plan could read: nothing to copy
      for (uint32_t u = 0; u < run.units; ++u) {
        if (!api_->copy_2d_to_host_async(
                c.data + run.data_at + run.header + size_t{u} * run.unit_bytes, run.compact_bytes(),
                run.device + run.data_offset + uint64_t{u} * run.segment, run.slice, run.unit_bytes,
                run.rows, copy_stream_)) {
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
  stats_.capture_syncs += capture_syncs_;
  capture_syncs_ = 0;
  if (failed != nullptr) note_copy_error(failed);
}

}  // namespace proton::instr
