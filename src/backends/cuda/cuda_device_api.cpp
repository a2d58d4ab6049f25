// The instrumentation runtime's device API over the CUDA driver, dlopen'd so the package loads
// on machines without one. Only this file knows CUDA.
#include <cuda.h>
#include <dlfcn.h>

#include <atomic>
#include <string>

#include "backends/instrumentation/device_api.h"

namespace proton::instr {

namespace {

// One typed table: each entry point declared once, with the real signature from cuda.h.
struct CudaTable {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set = nullptr;
  decltype(&::cuCtxGetDevice) ctx_device = nullptr;
  decltype(&::cuDeviceGetAttribute) attribute = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemFree_v2) mem_free = nullptr;
  decltype(&::cuMemAllocHost_v2) host_alloc = nullptr;
  decltype(&::cuMemFreeHost) host_free = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy_v2) stream_destroy = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy_v2) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_sync = nullptr;
  decltype(&::cuStreamWaitEvent) stream_wait = nullptr;
  decltype(&::cuMemcpy2DAsync_v2) copy_2d_async = nullptr;
  decltype(&::cuStreamIsCapturing) is_capturing = nullptr;
  decltype(&::cuThreadExchangeStreamCaptureMode) capture_mode = nullptr;
  decltype(&::cuCtxSynchronize) ctx_sync = nullptr;
  decltype(&::cuStreamGetCaptureInfo_v3) capture_info = nullptr;
  decltype(&::cuMemcpyDtoDAsync_v2) copy_d2d = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;      // optional
  decltype(&::cuDeviceGetCount) device_count = nullptr;  // optional
};

template <typename F>
bool bind(void* lib, F& fn, const char* name, std::string& why) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (fn == nullptr) why = std::string("libcuda has no ") + name;
  return fn != nullptr;
}

class CudaDeviceApi final : public DeviceApi {
 public:
  bool load(std::string& why) override {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      why = "no CUDA driver (libcuda.so.1 could not be loaded)";
      return false;
    }
    CudaTable& t = t_;
    bool ok = bind(lib_, t.init, "cuInit", why) && bind(lib_, t.ctx_get, "cuCtxGetCurrent", why) &&
              bind(lib_, t.ctx_set, "cuCtxSetCurrent", why) &&
              bind(lib_, t.ctx_device, "cuCtxGetDevice", why) &&
              bind(lib_, t.attribute, "cuDeviceGetAttribute", why) &&
              bind(lib_, t.mem_alloc, "cuMemAlloc_v2", why) &&
              bind(lib_, t.mem_free, "cuMemFree_v2", why) &&
              bind(lib_, t.host_alloc, "cuMemAllocHost_v2", why) &&
              bind(lib_, t.host_free, "cuMemFreeHost", why) &&
              bind(lib_, t.stream_create, "cuStreamCreate", why) &&
              bind(lib_, t.stream_destroy, "cuStreamDestroy_v2", why) &&
              bind(lib_, t.event_create, "cuEventCreate", why) &&
              bind(lib_, t.event_destroy, "cuEventDestroy_v2", why) &&
              bind(lib_, t.event_record, "cuEventRecord", why) &&
              bind(lib_, t.event_sync, "cuEventSynchronize", why) &&
              bind(lib_, t.stream_wait, "cuStreamWaitEvent", why) &&
              bind(lib_, t.copy_2d_async, "cuMemcpy2DAsync_v2", why) &&
              bind(lib_, t.is_capturing, "cuStreamIsCapturing", why) &&
              bind(lib_, t.capture_mode, "cuThreadExchangeStreamCaptureMode", why) &&
              bind(lib_, t.ctx_sync, "cuCtxSynchronize", why) &&
              bind(lib_, t.capture_info, "cuStreamGetCaptureInfo_v3", why) &&
              bind(lib_, t.copy_d2d, "cuMemcpyDtoDAsync_v2", why);
    t.error_name = reinterpret_cast<decltype(&::cuGetErrorName)>(dlsym(lib_, "cuGetErrorName"));
    t.device_count =
        reinterpret_cast<decltype(&::cuDeviceGetCount)>(dlsym(lib_, "cuDeviceGetCount"));
    if (ok && t.init(0) != CUDA_SUCCESS) {
      why = "cuInit failed";
      ok = false;
    }
    return ok;
  }
  bool capture_context() override {
    CUcontext ctx = nullptr;
    if (t_.ctx_get(&ctx) != CUDA_SUCCESS || ctx == nullptr) return false;
    ctx_ = ctx;
    CUdevice dev = 0;
    if (t_.ctx_device(&dev) == CUDA_SUCCESS) {
      device_ = static_cast<uint32_t>(dev);
      int khz = 0;
      if (t_.attribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev) == CUDA_SUCCESS)
        clock_khz_ = static_cast<uint32_t>(khz);
    }
    return true;
  }
  void bind_context() override {
    if (ctx_ != nullptr) t_.ctx_set(ctx_);
  }
  uint32_t device_id() override { return device_; }
  uint64_t current_context() override {
    CUcontext ctx = nullptr;
    return t_.ctx_get(&ctx) == CUDA_SUCCESS ? reinterpret_cast<uint64_t>(ctx) : 0;
  }
  int device_count() override {
    int n = 0;
    return t_.device_count != nullptr && t_.device_count(&n) == CUDA_SUCCESS ? n : 0;
  }
  std::string last_error() override {
    CUresult r = last_.load(std::memory_order_relaxed);
    if (r == CUDA_SUCCESS) return {};
    const char* name = nullptr;
    if (t_.error_name != nullptr && t_.error_name(r, &name) == CUDA_SUCCESS && name != nullptr)
      return std::string(name) + " (" + std::to_string(static_cast<int>(r)) + ")";
    return "CUresult " + std::to_string(static_cast<int>(r));
  }
  uint32_t sm_clock_khz() override { return clock_khz_; }
  uint64_t alloc_device(size_t bytes) override {
    CUdeviceptr p = 0;
    return ok(t_.mem_alloc(&p, bytes)) ? static_cast<uint64_t>(p) : 0;
  }
  void free_device(uint64_t ptr) override {
    if (ptr != 0) t_.mem_free(static_cast<CUdeviceptr>(ptr));
  }
  void* alloc_pinned(size_t bytes) override {
    void* p = nullptr;
    return ok(t_.host_alloc(&p, bytes)) ? p : nullptr;
  }
  void free_pinned(void* ptr) override {
    if (ptr != nullptr) t_.host_free(ptr);
  }
  void* create_stream() override {
    CUstream s = nullptr;
    return ok(t_.stream_create(&s, CU_STREAM_NON_BLOCKING)) ? s : nullptr;
  }
  void destroy_stream(void* s) override {
    if (s != nullptr) t_.stream_destroy(static_cast<CUstream>(s));
  }
  void* create_event() override {
    // Blocking sync: the consumer sleeps in cuEventSynchronize instead of spinning on a core
    // the launching thread may need.
    CUevent e = nullptr;
    return ok(t_.event_create(&e, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC)) ? e : nullptr;
  }
  void destroy_event(void* e) override {
    if (e != nullptr) t_.event_destroy(static_cast<CUevent>(e));
  }
  bool record(void* e, uint64_t stream) override {
    return ok(t_.event_record(static_cast<CUevent>(e), reinterpret_cast<CUstream>(stream)));
  }
  bool wait(void* s, void* e) override {
    return ok(t_.stream_wait(static_cast<CUstream>(s), static_cast<CUevent>(e), 0));
  }
  bool copy_2d_to_host_async(void* dst, size_t dst_pitch, uint64_t src, size_t src_pitch,
                             size_t width, size_t height, void* s) override {
    CUDA_MEMCPY2D c{};
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = static_cast<CUdeviceptr>(src);
    c.srcPitch = src_pitch;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = dst;
    c.dstPitch = dst_pitch;
    c.WidthInBytes = width;
    c.Height = height;
    return ok(t_.copy_2d_async(&c, static_cast<CUstream>(s)));
  }
  bool synchronize(void* e) override { return ok(t_.event_sync(static_cast<CUevent>(e))); }
  bool is_capturing(uint64_t stream) override {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    // An invalidated capture counts as one: the stream still records nothing that runs now.
    return t_.is_capturing(reinterpret_cast<CUstream>(stream), &status) == CUDA_SUCCESS &&
           status != CU_STREAM_CAPTURE_STATUS_NONE;
  }
  int relax_capture_mode() override {
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    t_.capture_mode(&mode);
    return static_cast<int>(mode);
  }
  void restore_capture_mode(int previous) override {
    auto mode = static_cast<CUstreamCaptureMode>(previous);
    t_.capture_mode(&mode);
  }
  bool synchronize_context() override { return ok(t_.ctx_sync()); }
  uint64_t capture_graph(uint64_t stream) override {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
    if (t_.capture_info(reinterpret_cast<CUstream>(stream), &status, &id, &graph, nullptr, nullptr,
                        nullptr) != CUDA_SUCCESS ||
        status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
      return 0;
    return reinterpret_cast<uint64_t>(graph);
  }
  bool copy_on(uint64_t stream, uint64_t dst, uint64_t src, size_t bytes) override {
    return ok(t_.copy_d2d(static_cast<CUdeviceptr>(dst), static_cast<CUdeviceptr>(src), bytes,
                          reinterpret_cast<CUstream>(stream)));
  }

 private:
  bool ok(CUresult r) {
    if (r != CUDA_SUCCESS) last_.store(r, std::memory_order_relaxed);
    return r == CUDA_SUCCESS;
  }
  std::atomic<CUresult> last_{CUDA_SUCCESS};
  void* lib_ = nullptr;  // never dlclose'd: callbacks may run until process exit
  CudaTable t_;
  CUcontext ctx_ = nullptr;
  uint32_t device_ = 0;
  uint32_t clock_khz_ = 0;
};

}  // namespace

std::unique_ptr<DeviceApi> make_device_api() {
  return std::make_unique<CudaDeviceApi>();
}

}  // namespace proton::instr
