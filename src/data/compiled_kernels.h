// What the compiler decided for each compiled Triton kernel: warps, pipeline stages, CTAs,
// shared memory, registers and spills, the config it was compiled for and where its @jit
// function is. Python hands each compiled kernel over once, when Triton loads it (never per
// launch); the Hatchet writer joins them to the kernel nodes by name (and, where one name has
// several compiled variants, by the launch facts the GPU recorded for the node).
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/launch_facts.h"

namespace proton {

struct CompiledKernel {
  std::string name;  // the kernel's symbol, as the GPU's kernel records name it
  // -1 where the compiler did not say (a Triton that lacks the field).
  int64_t num_warps = -1;
  int64_t num_stages = -1;
  int64_t num_ctas = -1;
  int64_t shared_bytes = -1;  // dynamic shared memory per block the kernel asks for
  int64_t n_regs = -1;        // registers per thread
  int64_t n_spills = -1;      // spilled registers per thread, as Triton reports them
  std::string config;         // "BLOCK_M=64, BLOCK_N=128, num_warps=4, num_stages=3"
  std::string source;         // "path/to/kernels.py:42": the @jit function's first line

  bool operator==(const CompiledKernel&) const = default;
};

/// The compiled kernel a kernel node stands for: one whose name is the node's name, or its name
/// up to the first '[' or ' ' (a launch_metadata name such as "matmul[BLOCK_M=64]"), and whose
/// num_warps x `warp_size` is the node's block size. Where several such variants differ, only
/// the one whose registers and dynamic shared memory are those the GPU recorded; nullptr when
/// none or still several do.
const CompiledKernel* match_compiled(std::span<const CompiledKernel> kernels,
                                     std::string_view node_name, const LaunchFacts& launch,
                                     uint32_t warp_size = 32);

/// The process's compiled kernels. Added to once per compiled kernel and read when a profile is
/// written, so a mutex (`mu_`, guarding `kernels_`) costs nothing that matters.
class CompiledKernels {
 public:
  static CompiledKernels& global();

  /// Keeps `k` unless an identical one is kept (a kernel loaded on a second device).
  void add(CompiledKernel k);
  std::vector<CompiledKernel> snapshot() const;
  void clear();

 private:
  mutable std::mutex mu_;
  std::vector<CompiledKernel> kernels_;
};

}  // namespace proton
