// Regions in hand-written CUDA kernels, recorded in the layout Triton's instrumentation writes,
// so Proton's runtime decodes CUDA and Triton kernels alike (docs/instrumentation.md).
//
//   __global__ void kernel(..., uint8_t* proton_scratch) {
//     proton::Regions<kDataBytes> regions(proton_scratch);   // every thread of the CTA
//     regions.enter(0);  ...  regions.exit(0);                // scope ids 0..255, per warp
//     regions.finish();                                       // every thread, at the very end
//   }
//
// The host gives each CTA `proton::scratch_bytes(num_warps, kDataBytes)` bytes
// (proton::Regions::slice_bytes) and names the scope ids when it hands the buffer to Proton
// (python: proton.hooks.instrumentation.add_cuda_regions). Lane 0 of each warp records; each
// warp owns data_bytes / warps of the data, used as a ring (the oldest events are overwritten).
// Events go straight to global memory (no shared buffer), so a record costs one clock read and
// two 4-byte stores.
#pragma once

#include <cstdint>

namespace proton {

__host__ __device__ constexpr uint32_t scratch_bytes(uint32_t num_warps, uint32_t data_bytes) {
  return 40u + 4u * num_warps + data_bytes;
}

template <uint32_t DataBytes>
class Regions {
  static_assert((DataBytes & (DataBytes - 1)) == 0, "DataBytes must be a power of two");

 public:
  __device__ explicit Regions(uint8_t* scratch) {
    warps_ = (blockDim.x * blockDim.y * blockDim.z + 31) / 32;
    const uint32_t cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    slice_ = scratch + static_cast<uint64_t>(cta) * scratch_bytes(warps_, DataBytes);
    const uint32_t tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    warp_ = tid / 32;
    lane0_ = (tid % 32) == 0;
    thread0_ = tid == 0;
    capacity_ = DataBytes / warps_ / 8;
    seg_ = reinterpret_cast<uint32_t*>(slice_ + 40 + 4 * warps_ + warp_ * (DataBytes / warps_));
    if (thread0_) {
      store32(0, 0xdeadbeefu);
      store32(4, cta);
      store32(8, smid());
      store32(12, DataBytes);
      store64(16, globaltimer());
    }
  }

  __device__ __forceinline__ void enter(uint32_t scope) { record(scope, false); }
  __device__ __forceinline__ void exit(uint32_t scope) { record(scope, true); }

  /// Writes the per-warp counts and the final timestamps; call once from every thread.
  __device__ void finish() {
    if (lane0_) store32(40 + 4 * warp_, written_ * 2);
    __syncthreads();
    if (thread0_) {
      store64(24, globaltimer());
      store64(32, globaltimer());
    }
  }

 private:
  __device__ __forceinline__ void record(uint32_t scope, bool end) {
    if (!lane0_) return;
    const uint32_t clock = static_cast<uint32_t>(clock64());
    const uint32_t w0 = (end ? 0x80000000u : 0u) | ((scope & 0xffu) << 23);
    uint32_t* e = seg_ + 2 * (written_ % capacity_);
    e[0] = w0;  // two 4-byte stores: segments are 8-byte aligned only for even warp counts
    e[1] = clock;
    ++written_;
  }
  __device__ static uint32_t smid() {
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
  }
  __device__ static uint64_t globaltimer() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
  }
  __device__ void store32(uint32_t off, uint32_t v) {
    *reinterpret_cast<uint32_t*>(slice_ + off) = v;
  }
  __device__ void store64(uint32_t off, uint64_t v) {
    // The header's u64 fields sit at 4-byte alignment relative to odd warp counts; split.
    store32(off, static_cast<uint32_t>(v));
    store32(off + 4, static_cast<uint32_t>(v >> 32));
  }

  uint8_t* slice_;
  uint32_t* seg_;
  uint32_t warps_;
  uint32_t warp_;
  uint32_t capacity_;
  uint32_t written_ = 0;
  bool lane0_;
  bool thread0_;
};

}  // namespace proton
