#include "backends/instrumentation/instr_runtime.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "attribution/host_call.h"
#include "backends/instrumentation/instr_runtime_parts.h"
#include "common/hot.h"
#include "common/thread_name.h"

namespace proton::instr {

#ifndef PROTON_HAVE_CUPTI
std::unique_ptr<DeviceApi> make_device_api() {
  return nullptr;
}
#endif

namespace {

// Set by configure() (the session layer, at every start); read when the runtime is made and
// when a pool is opened.
std::mutex g_options_mu;
InstrOptions g_options;  // guarded by g_options_mu

InstrOptions current_options() {
  std::lock_guard lock(g_options_mu);
  return g_options;
}

// Half the CPUs this process may run on, within [kMinDecoders, kMaxDecoders]: helpers run
// only while decoding falls behind the GPU, and then leave the program the other half.
uint64_t default_decoders() {
  cpu_set_t allowed;
  const uint64_t cpus = sched_getaffinity(0, sizeof(allowed), &allowed) == 0
                            ? static_cast<uint64_t>(CPU_COUNT(&allowed))
                            : std::thread::hardware_concurrency();
  return std::clamp<uint64_t>(cpus / 2, InstrRuntime::kMinDecoders, InstrRuntime::kMaxDecoders);
}

}  // namespace

uint64_t default_pool_bytes() {
  if (uint64_t bytes = current_options().pool_bytes; bytes != 0) return bytes;
  // 256 MB of device memory (no host twin): batches of ~100 launches of a 132-CTA kernel with
  // room to spare while one is copied back. Fewer, larger batches mean fewer of the consumer's
  // driver calls beside the launching thread, which block it about once per batch (an H100:
  // the median per-launch gap over a Python allocator 1.38 us with 64 MB batches of ~30
  // launches, 0.82 us with these).
  return uint64_t{256} << 20;
}

InstrRuntime::InstrRuntime() : InstrRuntime(current_options()) {}

InstrRuntime::InstrRuntime(const InstrOptions& o)
    : staging_first_bytes(o.staging_bytes != 0 ? o.staging_bytes : kStagingMb << 20),
      decoder_threads(o.decoders != 0 ? std::min<size_t>(o.decoders, kMaxDecoders)
                                      : default_decoders()),
      decode_cvs_(std::make_unique<std::condition_variable[]>(decoder_threads)),
      gather_ms_(o.gather_ms != 0 ? static_cast<int>(o.gather_ms) : kGatherMs),
      wake_batch_(o.wake_batch != 0 ? std::min<size_t>(o.wake_batch, kMaxBatch) : kWakeBatch),
      decoder_held_(decoder_threads, 0) {}

void InstrRuntime::configure(const InstrOptions& options) {
  std::lock_guard lock(g_options_mu);
  g_options = options;
}

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
    if (arena_.base() != nullptr) api_->free_pinned(arena_.base());
    for (void* p : retired_pinned_)
      api_->free_pinned(p);
    for (uint64_t d : old_discards_)
      api_->free_device(d);
    for (const ContextDiscard& d : discards_)
      api_->free_device(d.device);
    if (copy_stream_ != nullptr) api_->destroy_stream(copy_stream_);
    for (const auto& c : captured_)
      api_->free_device(c->device);
  }
  capture_api_.store(nullptr, std::memory_order_release);
  captured_.clear();
  {
    std::lock_guard graphs(graphs_mu_);
    graph_launches_.clear();
    exec_launches_.clear();
  }
  old_discards_.clear();
  discards_.clear();
  retired_pinned_.clear();
  arena_.reset(nullptr, 0);
  batch_event_ = nullptr;
  stream_events_.clear();
  free_copied_.clear();
  copies_made_ = 0;
  api_ = std::move(api);
  ++api_generation_;
  api_loaded_ = false;
  copy_stream_ = nullptr;
  free_events_.clear();
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
    one_gpu_ = api_->device_count() == 1;
    capture_api_.store(api_.get(), std::memory_order_release);
  }
  return true;
}

void InstrRuntime::open(uint32_t session, uint64_t pool_bytes, uint64_t deliver_mask) {
  std::unique_lock lock(mu_);
  if (pools_.count(session) != 0) return;  // opened already
  auto pool = std::make_unique<Pool>(pool_bytes != 0 ? pool_bytes : default_pool_bytes());
  pool->deliver_mask = deliver_mask != 0 ? deliver_mask : uint64_t{1} << (session & 63u);
  Pool& p = *pool;
  pools_[session] = std::move(pool);
  // The pool's device memory now, when the starting thread has a GPU context and the process
  // sees one GPU: allocating it (and the first staging) takes milliseconds, which the
  // session's first launch paid inside the program's loop (a 1,000-launch loop ran ~0.6 us a
  // launch slower for it). With several GPUs the launches may run on another device than the
  // one current here (a kernel writing another device's memory faults), so the first launch
  // allocates it on its own, as without a driver or a context; a session without a GPU still
  // starts and keeps its CPU-side data.
  std::string why;
  if (ensure_device(why) && one_gpu_) ensure_pool(p, /*at_launch=*/false);
  choose_active_pool();
  work_cv_.notify_all();  // an idle consumer waits without a bound only while no session runs
  if (!consumer_.joinable()) {
    stop_ = false;
    consumer_ = std::thread([this] {
      name_this_thread("proton-copy");
      ProfilerHostCalls ours;  // its event waits are not the program's synchronizes
      consume();
    });
    for (size_t i = 0; i < decoder_threads; ++i)
      decoders_.emplace_back([this, i] {
        name_this_thread(i == 0 ? "proton-decode" : "proton-decode+");
        decode_batches(i);
      });
  }
}

InstrRuntime::Pool* InstrRuntime::lowest_open_pool() {
  for (auto& [id, p] : pools_)
    if (!p->closing) return p.get();
  return nullptr;
}

void InstrRuntime::choose_active_pool() {
  Pool* active = nullptr;
  uint64_t mask = 0;
  for (auto& [id, p] : pools_) {  // the lowest open session's pool
    if (p->closing) continue;
    mask |= p->deliver_mask;
    if (active == nullptr) active = p.get();
  }
  open_mask_.store(mask, std::memory_order_seq_cst);
  // A pool whose device memory is not there yet (or failed) is reached through alloc_slow.
  active_.store(
      active != nullptr && active->ready.load(std::memory_order_acquire) ? active : nullptr,
      std::memory_order_seq_cst);
}

uint64_t InstrRuntime::records_waiting() const {
  uint64_t n = 0;
  for (const auto& q : queues_)
    n += q->written() - q->taken();
  return n;
}

void InstrRuntime::drain() {
  std::unique_lock lock(mu_);
  // Every record written so far, queue by queue (a later launch of another thread must not
  // stand in for an earlier one of this thread).
  std::vector<std::pair<std::shared_ptr<LaunchQueue>, uint64_t>> targets;
  for (const auto& q : queues_)
    targets.emplace_back(q, q->written());
  ++urgent_;
  work_cv_.notify_all();
  done_cv_.wait(lock, [&] {
    for (const auto& [q, written] : targets)
      if (q->finished < written) return false;
    return true;
  });
  --urgent_;
}

void InstrRuntime::close(uint32_t session) {
  Pool* pool = nullptr;
  {
    // No new slices from this pool: launches see another pool (or none) from now on.
    std::lock_guard lock(mu_);
    auto it = pools_.find(session);
    if (it == pools_.end()) return;
    pool = it->second.get();
    pool->closing = true;
    choose_active_pool();
  }
  // This thread's own slice that never reached a launch (it failed in Python): given back.
  ThreadSide& t = thread_side();
  if (t.valid && t.pool == pool) give_back_unlaunched(t);
  // Launches between their allocator and their exit on other threads: their records are
  // queued (and drained below) once they exit. Bounded: a thread stuck in between.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(abandon_after_ms);
  while (pool->users.load(std::memory_order_seq_cst) != 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  drain();
  std::unique_lock lock(mu_);
  auto it = pools_.find(session);
  if (it == pools_.end() || it->second.get() != pool) return;  // closed meanwhile
  if (pool->users.load(std::memory_order_seq_cst) != 0) {
    // A launch still holds a slice: its kernel may write the memory, and its exit the ring.
    retired_.push_back(std::move(it->second));
  } else if (pool->device != 0) {
    api_->free_device(pool->device);
    stats_.pool_bytes -= pool->size();
  }
  pools_.erase(it);
  if (pools_.empty() && api_) {  // no session runs: outgrown staging can go (freeing syncs)
    for (void* p : retired_pinned_)
      api_->free_pinned(p);
    retired_pinned_.clear();
  }
}

void InstrRuntime::register_kernel(uint64_t function, KernelInfo info) {
  auto shared = std::make_shared<const KernelInfo>(std::move(info));
  std::lock_guard lock(mu_);
  kernels_[function] = std::move(shared);
}

bool InstrRuntime::ensure_pool(Pool& p, bool at_launch) {
  if (p.device != 0) return true;
  if (p.failed) return false;
  if (!api_->capture_context()) {
    // No current context on this thread yet: this launch gets the discard slice (an overflow)
    // and the next launch tries again, instead of losing every launch of the session.
    if (at_launch && errors_.size() < 8)
      errors_.push_back("no current GPU context at a launch; its regions are lost");
    return false;
  }
  if (copy_stream_ == nullptr) copy_stream_ = api_->create_stream();
  // The pool's context, which each launch compares with its thread's, only with several GPUs
  // in sight: with CUPTI subscribed, cuCtxGetCurrent goes through CUPTI's API dispatch and
  // its mutex (~0.5 us a launch on an H100), and one GPU means one device for every launch.
  p.ctx = one_gpu_ ? 0 : api_->current_context();
  p.device = api_->alloc_device(p.size());
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
  stats_.pool_bytes += p.size();
  if (arena_.base() == nullptr) {
    // The copy-back's staging, pinned here, before any kernel of the session runs (pinned by
    // the consumer at its first batch, it held the driver while the program launched). If it
    // fails, the consumer tries again when it needs it.
    const uint64_t t0 = now_ns();
    if (auto* base = static_cast<uint8_t*>(api_->alloc_pinned(staging_first_bytes)))
      replace_arena(base, staging_first_bytes, t0);
  }
  p.ready.store(true, std::memory_order_release);
  choose_active_pool();  // launches reserve in it without the lock from now on
  return true;
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

InstrStats InstrRuntime::stats() {
  std::lock_guard lock(mu_);
  InstrStats s = stats_;
  s.deferred_wakes = deferred_wakes_.load(std::memory_order_relaxed);
  s.graph_unheard = replays_unheard_.load(std::memory_order_relaxed);
  s.graph_replays = replays_copied_.load(std::memory_order_relaxed);
  for (size_t held : decoder_held_)
    s.decoder_held_bytes += held;
  return s;
}

std::vector<std::string> InstrRuntime::errors() {
  std::lock_guard lock(mu_);
  // Copy errors first, kept apart so decode errors cannot crowd them out.
  std::vector<std::string> out = copy_error_lines_;
  out.insert(out.end(), errors_.begin(), errors_.end());
  return out;
}

}  // namespace proton::instr
