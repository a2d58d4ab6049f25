#include "backends/instrumentation/instr_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace proton::instr {

#ifndef PROTON_HAVE_CUPTI
std::unique_ptr<DeviceApi> make_device_api() {
  return nullptr;
}
#endif

// A ring over one device allocation and its pinned host twin: slices are handed out at `head`
// and given back in order at `tail` (offsets grow without bound; position = offset % size).
struct InstrRuntime::Pool {
  uint64_t size = 0;
  uint64_t device = 0;
  uint8_t* host = nullptr;
  uint64_t head = 0;
  uint64_t tail = 0;
  bool closing = false;
  bool failed = false;
  uint64_t deliver_mask = 0;  // the session runtime's bit for this session (its slot)
};

struct InstrRuntime::Job {
  Pool* pool = nullptr;  // nullptr: the discard slice (not decoded)
  uint64_t offset = 0;   // ring offset of the slice
  uint64_t end = 0;      // ring offset after it (tail moves here when done)
  uint64_t bytes = 0;
  std::shared_ptr<const KernelInfo> kernel;
  ContextId ctx = 0;
  uint64_t sessions = 0;
  void* launched = nullptr;  // event on the launch's stream
  bool ok = true;
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
    for (uint64_t d : old_discards_)
      api_->free_device(d);
    if (discard_ != 0) api_->free_device(discard_);
    if (copy_stream_ != nullptr) api_->destroy_stream(copy_stream_);
  }
  old_discards_.clear();
  batch_event_ = nullptr;
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
  }
}

void InstrRuntime::drain() {
  std::unique_lock lock(mu_);
  uint64_t target = queued_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] { return finished_ >= target; });
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
  if (p.host != nullptr) api_->free_pinned(p.host);
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
  p.host = static_cast<uint8_t*>(api_->alloc_pinned(p.size));
  if (p.device == 0 || p.host == nullptr || copy_stream_ == nullptr) {
    if (p.device != 0) api_->free_device(p.device);
    if (p.host != nullptr) api_->free_pinned(p.host);
    p.device = 0;
    p.host = nullptr;
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
  Pool* pool = nullptr;
  for (auto& [id, p] : pools_) {  // the lowest open session's pool
    if (!p->closing) {
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
        pool->head = start + need;
        stats_.max_in_flight_bytes = std::max(stats_.max_in_flight_bytes, pool->head - pool->tail);
        return pool->device + start % pool->size;
      }
      // Full: the GPU is behind the host. Let the consumer free slices, up to a bound.
      work_cv_.notify_all();
      if (done_cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
  }
  // No pool, or still full: a discard slice keeps the kernel safe; its records are dropped.
  ++stats_.overflows;
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

void InstrRuntime::launch_exit(uint64_t function, uint64_t stream, ContextId ctx,
                               uint64_t sessions) {
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
  ++stats_.launches;
  auto k = kernels_.find(function);
  if (k != kernels_.end()) job->kernel = k->second;
  // The only driver call on the launching thread: an event after the kernel on its stream.
  // The consumer orders its copy after it (copy_back).
  job->launched = take_event();
  job->ok = job->launched != nullptr && api_->record(job->launched, stream);
  if (!job->ok) {
    ++stats_.copy_errors;
    note_copy_error(job->launched == nullptr ? "event create (launching thread)"
                                             : "event record on the launch's stream");
  }
  queue_.push_back(std::move(job));
  ++queued_;
  work_cv_.notify_one();
}

void InstrRuntime::consume() {
  uint64_t generation = 0;  // of the device API whose context this thread has bound
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty() && stop_) return;
    // Everything queued so far is one batch: one wait per launch, one copy per contiguous run
    // of slices, one event to wait for. None of it runs on the launching thread.
    std::deque<std::unique_ptr<Job>> batch;
    batch.swap(queue_);
    const bool rebind = generation != api_generation_;  // first batch, or a new device API
    generation = api_generation_;
    lock.unlock();
    // The context first: an event made on this thread before it is bound belongs to no context
    // (CUDA_ERROR_INVALID_CONTEXT), which lost the whole first batch on the H100.
    if (rebind) api_->bind_context();
    lock.lock();
    if (batch_event_ == nullptr) batch_event_ = api_->create_event();
    void* copied = batch_event_;
    lock.unlock();
    copy_back(batch, copied);
    for (auto& job : batch)
      finish(*job);
    lock.lock();
    for (auto& job : batch) {
      if (job->launched) free_events_.push_back(job->launched);
      job->pool->tail = std::max(job->pool->tail, job->end);
      job->kernel.reset();
      free_jobs_.push_back(std::move(job));
    }
    finished_ += batch.size();
    done_cv_.notify_all();
  }
}

void InstrRuntime::copy_back(std::deque<std::unique_ptr<Job>>& batch, void* copied) {
  const char* failed = nullptr;  // the first stage that failed, for the error line
  bool ok = copied != nullptr;
  if (!ok) failed = "event create (consumer thread)";
  for (auto& job : batch) {
    bool waited = job->ok && api_->wait(copy_stream_, job->launched);
    if (job->ok && !waited && failed == nullptr) failed = "stream wait for the launch";
    job->ok = waited;
  }
  // Slices of one pool handed out in a row sit next to each other unless the ring wrapped.
  size_t i = 0;
  while (i < batch.size()) {
    Pool* pool = batch[i]->pool;
    uint64_t from = batch[i]->offset;
    uint64_t to = batch[i]->end;
    size_t j = i + 1;
    while (j < batch.size() && batch[j]->pool == pool && batch[j]->offset >= to &&
           batch[j]->offset / pool->size == from / pool->size &&
           batch[j]->end - (from / pool->size) * pool->size <= pool->size) {
      to = batch[j]->end;
      ++j;
    }
    uint64_t at = from % pool->size;
    bool copy_ok =
        api_->copy_to_host_async(pool->host + at, pool->device + at, to - from, copy_stream_);
    if (!copy_ok && failed == nullptr) failed = "device-to-host copy";
    for (size_t k = i; k < j; ++k)
      batch[k]->ok = batch[k]->ok && copy_ok;
    i = j;
  }
  if (ok && !api_->record(copied, reinterpret_cast<uint64_t>(copy_stream_))) {
    ok = false;
    if (failed == nullptr) failed = "event record after the copies";
  }
  if (ok && !api_->synchronize(copied)) {
    ok = false;
    if (failed == nullptr) failed = "event synchronize";
  }
  if (!ok)
    for (auto& job : batch)
      job->ok = false;
  if (failed != nullptr) {
    std::lock_guard lock(mu_);
    note_copy_error(failed);
  }
}

void InstrRuntime::finish(Job& job) {
  // Runs on the consumer thread without mu_: the slice is ours until the tail passes it.
  if (!job.ok) {
    std::lock_guard lock(mu_);
    ++stats_.copy_errors;
    return;
  }
  if (!job.kernel) {
    std::lock_guard lock(mu_);
    ++stats_.unknown_kernels;
    return;
  }
  const KernelInfo& k = *job.kernel;
  const uint8_t* bytes = job.pool->host + job.offset % job.pool->size;
  DecodeResult r = decode_scratch({bytes, job.bytes}, k.layout);
  RegionSink* sink;
  {
    std::lock_guard lock(mu_);
    ++stats_.decoded;
    stats_.bytes_copied += job.bytes;
    stats_.samples += r.samples.size();
    stats_.wrapped_units += r.wrapped_units;
    stats_.overwritten_events += r.overwritten_events;
    stats_.unmatched_events += r.unmatched_events;
    stats_.corrupt_ctas += r.corrupt_ctas;
    for (auto& e : r.errors)
      if (errors_.size() < 8) errors_.push_back(e);
    sink = sink_;
  }
  if (sink != nullptr)
    sink->deliver(job.sessions, job.ctx, k, r, api_->device_id(), api_->sm_clock_khz());
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
