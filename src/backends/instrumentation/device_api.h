// What the instrumentation runtime needs from a GPU driver, and nothing vendor-specific: device
// memory, pinned host memory, one stream of our own, events, asynchronous strided device-to-host
// copies.
// The CUDA implementation (src/backends/cuda) dlopens libcuda; tests use a fake over host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace proton::instr {

class DeviceApi {
 public:
  virtual ~DeviceApi() = default;

  /// Loads the driver; false with `why` when there is none. Called once, before anything else.
  virtual bool load(std::string& why) = 0;
  /// Remembers the calling thread's current device context (the launching thread's), so our
  /// consumer thread can make it current too.
  virtual bool capture_context() = 0;
  virtual void bind_context() = 0;
  virtual uint32_t device_id() = 0;
  /// GPUs this process can see (0 when unknown): with one, every launch runs where the session
  /// started, so its pool can be allocated at the start.
  virtual int device_count() { return 1; }
  /// The calling thread's current GPU context as a number (0: none, or unknown). Asked at
  /// every launch only where the process sees several GPUs, to keep a launch on another device
  /// than its pool's from writing that device's memory: with CUPTI subscribed the driver call
  /// goes through CUPTI's dispatch (~0.5 us on an H100).
  virtual uint64_t current_context() { return 0; }
  /// The SM clock of the captured context's device in kHz (cycles -> ns on the timeline).
  virtual uint32_t sm_clock_khz() = 0;

  virtual uint64_t alloc_device(size_t bytes) = 0;  // 0 on failure
  virtual void free_device(uint64_t ptr) = 0;
  virtual void* alloc_pinned(size_t bytes) = 0;  // nullptr on failure
  virtual void free_pinned(void* ptr) = 0;

  virtual void* create_stream() = 0;
  virtual void destroy_stream(void* stream) = 0;
  virtual void* create_event() = 0;  // without timing: cheapest to record
  virtual void destroy_event(void* event) = 0;

  /// Records `event` on the launch's stream (`stream` as Triton passes it: a handle, 0 = default).
  virtual bool record(void* event, uint64_t stream) = 0;
  /// Makes `stream` (ours) wait for `event` on the device; the host does not wait.
  virtual bool wait(void* stream, void* event) = 0;
  /// A strided device-to-host copy on `stream`: `height` rows of `width` bytes, rows `src_pitch`
  /// apart on the device and `dst_pitch` apart on the host (pinned).
  virtual bool copy_2d_to_host_async(void* dst, size_t dst_pitch, uint64_t src, size_t src_pitch,
                                     size_t width, size_t height, void* stream) = 0;
  /// Blocks the calling (consumer) thread until `event` completed.
  virtual bool synchronize(void* event) = 0;
  // CUDA-graph stream capture. A launch on a stream being captured is recorded into a graph
  // and runs at every replay of it, long after its launch call returned.
  /// Whether `stream` (a launch's, as Triton passes it) is being captured into a graph now.
  virtual bool is_capturing(uint64_t /*stream*/) { return false; }
  /// Lets the calling thread allocate and synchronize while another thread captures in global
  /// mode (which otherwise refuses such calls and invalidates that capture), as PyTorch's
  /// allocator does; returns the previous mode for restore_capture_mode().
  virtual int relax_capture_mode() { return 0; }
  virtual void restore_capture_mode(int /*previous*/) {}
  /// Waits for all work of the captured context (the consumer, when a launch's stream began a
  /// capture before the consumer could record an event on it).
  virtual bool synchronize_context() { return true; }
  /// The graph a capturing `stream` is building (a handle, as CUPTI's graph callbacks name
  /// it), 0 when it is not capturing or the driver cannot say.
  virtual uint64_t capture_graph(uint64_t /*stream*/) { return 0; }
  /// A device-to-device copy of `bytes` enqueued on a launch's `stream` (after the work the
  /// program enqueued there so far).
  virtual bool copy_on(uint64_t /*stream*/, uint64_t /*dst*/, uint64_t /*src*/, size_t /*bytes*/) {
    return false;
  }
  /// The driver's name for the last failed call of this API (e.g. "CUDA_ERROR_INVALID_CONTEXT"),
  /// empty when unknown: reported with copy errors so a lost launch says why.
  virtual std::string last_error() { return {}; }
};

/// The device API of this build (CUDA when compiled with CUDA headers), nullptr when none.
std::unique_ptr<DeviceApi> make_device_api();

}  // namespace proton::instr
