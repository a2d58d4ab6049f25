// A DeviceApi whose memory is host memory: the instrumentation runtime's tests run it without a
// GPU (copies are memcpy, events and streams are tokens, one context per thread that bound it).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/instrumentation/device_api.h"

namespace proton::instr::testing {

// The GPU context current on this thread in the fake device's eyes (0: its one context, 1).
inline thread_local uint64_t t_fake_context = 0;

class FakeDevice final : public DeviceApi {
 public:
  bool load(std::string&) override { return true; }
  bool capture_context() override {
    if (no_context) return false;  // as a thread that made no GPU context yet
    bind_context();
    return true;
  }
  void bind_context() override {
    std::lock_guard lock(bound_mu);
    bound.insert(std::this_thread::get_id());
  }
  uint32_t device_id() override { return 3; }
  int device_count() override { return devices; }
  uint64_t current_context() override {
    context_queries.fetch_add(1, std::memory_order_relaxed);
    return t_fake_context != 0 ? t_fake_context : 1;
  }
  uint32_t sm_clock_khz() override { return 1000000; }
  uint64_t alloc_device(size_t bytes) override {
    unsafe_if_capturing();
    ++allocs;
    alloc_contexts.push_back(current_context());
    // cuMemAlloc's alignment (256), which the pool's slice alignment relies on.
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    std::memset(p, 0, bytes);
    return reinterpret_cast<uint64_t>(p);
  }
  void free_device(uint64_t p) override { std::free(reinterpret_cast<void*>(p)); }
  void* alloc_pinned(size_t bytes) override {
    unsafe_if_capturing();
    ++pinned_allocs;
    return new uint8_t[bytes];  // not zeroed, as pinned memory (the arena is 32 MB)
  }
  void free_pinned(void* p) override {
    ++pinned_frees;
    delete[] static_cast<uint8_t*>(p);
  }
  void* create_stream() override { return this; }
  void destroy_stream(void*) override {}
  // As CUDA: a thread that never made the context current gets no event (the H100 failure:
  // CUDA_ERROR_INVALID_CONTEXT for the consumer's first event).
  void* create_event() override { return has_context() ? new int(0) : nullptr; }
  void destroy_event(void* e) override { delete static_cast<int*>(e); }
  bool record(void*, uint64_t stream) override {
    {
      std::lock_guard lock(capture_mu);
      if (capturing.count(stream) != 0) ++records_on_capturing;
    }
    return has_context() && !fail_records;
  }
  bool wait(void*, void*) override { return has_context(); }
  bool copy_2d_to_host_async(void* dst, size_t dst_pitch, uint64_t src, size_t src_pitch,
                             size_t width, size_t height, void*) override {
    if (!has_context() || fail_copies) return false;
    if (width > dst_pitch || width > src_pitch) return false;  // as cuMemcpy2D refuses it
    for (size_t r = 0; r < height; ++r)
      std::memcpy(static_cast<uint8_t*>(dst) + r * dst_pitch,
                  reinterpret_cast<const uint8_t*>(src) + r * src_pitch, width);
    copy_calls += 1;
    copied += width * height;
    return true;
  }
  bool synchronize(void*) override {
    unsafe_if_capturing();
    if (int ms = sync_delay_ms.load(); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return has_context();
  }
  // Stream capture: streams in `capturing` build a graph instead of running what is enqueued;
  // the tests replay it by writing the captured scratch and calling what CUPTI's callbacks call.
  bool is_capturing(uint64_t stream) override {
    capture_queries.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(capture_mu);
    return capturing.count(stream) != 0;
  }
  int relax_capture_mode() override {
    int previous = t_mode;
    t_mode = kRelaxed;
    return previous;
  }
  void restore_capture_mode(int previous) override { t_mode = previous; }
  bool synchronize_context() override {
    ++context_syncs;
    unsafe_if_capturing();
    return has_context();
  }
  // The graph a capturing stream builds: one per stream, named after it.
  uint64_t capture_graph(uint64_t stream) override {
    std::lock_guard lock(capture_mu);
    return capturing.count(stream) != 0 ? kGraphBase + stream : 0;
  }
  static constexpr uint64_t kGraphBase = 0x6000;
  // Runs at once: the fake's streams are in order with the host.
  bool copy_on(uint64_t stream, uint64_t dst, uint64_t src, size_t bytes) override {
    {
      std::lock_guard lock(capture_mu);
      if (capturing.count(stream) != 0) ++copies_on_capturing;
    }
    if (fail_copies) return false;
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    ++stream_copies;
    return true;
  }
  void begin_capture(uint64_t stream) {
    std::lock_guard lock(capture_mu);
    capturing.insert(stream);
  }
  void end_capture(uint64_t stream) {
    std::lock_guard lock(capture_mu);
    capturing.erase(stream);
  }
  // What a global-mode capture refuses from a thread not in relaxed mode (it would invalidate
  // the program's capture): counted.
  void unsafe_if_capturing() {
    std::lock_guard lock(capture_mu);
    if (!capturing.empty() && t_mode != kRelaxed) ++unsafe_calls;
  }
  static constexpr int kRelaxed = 2;
  static inline thread_local int t_mode = 0;
  std::mutex capture_mu;
  std::set<uint64_t> capturing;
  std::atomic<int> capture_queries{0};
  std::atomic<int> unsafe_calls{0};
  std::atomic<int> context_syncs{0};
  std::atomic<int> records_on_capturing{0};
  std::atomic<int> copies_on_capturing{0};
  std::atomic<int> stream_copies{0};

  bool has_context() {
    std::lock_guard lock(bound_mu);
    return bound.count(std::this_thread::get_id()) != 0;
  }
  std::string last_error() override { return fail_copies ? "FAKE_ERROR_COPY (7)" : ""; }
  int allocs = 0;
  std::vector<uint64_t> alloc_contexts;  // the context current at each alloc_device
  int devices = 1;                       // GPUs the process sees
  std::atomic<int> context_queries{0};   // current_context() calls (cuCtxGetCurrent)
  std::atomic<bool> no_context{false};
  bool fail_copies = false;
  std::atomic<bool> fail_records{false};
  std::atomic<int> sync_delay_ms{0};
  std::atomic<int> pinned_allocs{0},
      pinned_frees{0};  // the consumer's wait for its copies takes this long
  std::atomic<uint64_t> copy_calls{0};
  std::atomic<uint64_t> copied{0};
  std::mutex bound_mu;
  std::set<std::thread::id> bound;  // threads that made this device's context current
};

}  // namespace proton::instr::testing
