// A hand-written CUDA kernel with Proton regions (include/proton/instrument.cuh).
// Build: nvcc -O2 -arch=sm_90 -I include examples/cuda_regions/regions_example.cu -o regions_example
// Run:   ./regions_example scratch.bin   (writes the raw profile scratch for Proton to decode;
//        examples/cuda_regions/run_example.py does both and shows the regions on the tree)
#include <cstdio>
#include <vector>

#include "proton/instrument.cuh"

constexpr uint32_t kDataBytes = 8192;
enum Scope : uint32_t { kLoop = 0, kStep = 1 };

__global__ void saxpy_steps(float* y, const float* x, float a, int n, int steps,
                            uint8_t* scratch) {
  proton::Regions<kDataBytes> regions(scratch);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  regions.enter(kLoop);
  for (int s = 0; s < steps; ++s) {
    regions.enter(kStep);
    if (i < n) y[i] = a * x[i] + y[i] * 0.5f;
    regions.exit(kStep);
  }
  regions.exit(kLoop);
  regions.finish();
}

int main(int argc, char** argv) {
  const int n = 1 << 20, threads = 128, steps = 16;
  const int blocks = (n + threads - 1) / threads;
  const uint32_t slice = proton::scratch_bytes(threads / 32, kDataBytes);
  float *x, *y;
  uint8_t* scratch;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaMemset(y, 0, n * sizeof(float));
  cudaMalloc(&scratch, size_t{slice} * blocks);
  cudaMemset(scratch, 0, size_t{slice} * blocks);
  saxpy_steps<<<blocks, threads>>>(y, x, 2.0f, n, steps, scratch);
  std::vector<uint8_t> host(size_t{slice} * blocks);
  cudaMemcpy(host.data(), scratch, host.size(), cudaMemcpyDeviceToHost);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) {
    std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  const char* path = argc > 1 ? argv[1] : "scratch.bin";
  FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return 1;
  std::fwrite(host.data(), 1, host.size(), f);
  std::fclose(f);
  std::printf("kernel=saxpy_steps warps=%d scratch_bytes=%u ctas=%d file=%s\n", threads / 32, slice,
              blocks, path);
  return 0;
}
