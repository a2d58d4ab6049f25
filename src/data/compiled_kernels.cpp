#include "data/compiled_kernels.h"

#include <algorithm>

namespace proton {

namespace {

bool same_kernel(std::string_view compiled, std::string_view node_name) {
  if (compiled == node_name) return true;
  size_t cut = node_name.find_first_of("[ ");
  return cut != std::string_view::npos && node_name.substr(0, cut) == compiled;
}

bool consistent(const CompiledKernel& k, const LaunchFacts& f, uint32_t warp_size) {
  if (!f.known()) return true;
  uint64_t threads =
      uint64_t{f.block[0]} * std::max<uint16_t>(f.block[1], 1) * std::max<uint16_t>(f.block[2], 1);
  if (k.num_warps > 0 && threads != static_cast<uint64_t>(k.num_warps) * warp_size) return false;
  if (k.n_regs >= 0 && static_cast<uint64_t>(k.n_regs) != f.registers_per_thread) return false;
  if (k.shared_bytes >= 0 && static_cast<uint64_t>(k.shared_bytes) != f.dynamic_shared_bytes)
    return false;
  return true;
}

}  // namespace

const CompiledKernel* match_compiled(std::span<const CompiledKernel> kernels,
                                     std::string_view node_name, const LaunchFacts& launch,
                                     uint32_t warp_size) {
  const CompiledKernel* found = nullptr;
  for (const CompiledKernel& k : kernels) {
    if (!same_kernel(k.name, node_name) || !consistent(k, launch, warp_size)) continue;
    if (found != nullptr && !(*found == k)) return nullptr;  // two compiled variants fit
    found = &k;
  }
  return found;
}

CompiledKernels& CompiledKernels::global() {
  static auto* table = new CompiledKernels();  // leaked: writers may run during exit
  return *table;
}

void CompiledKernels::add(CompiledKernel k) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(kernels_.begin(), kernels_.end(), k) != kernels_.end()) return;
  kernels_.push_back(std::move(k));
}

std::vector<CompiledKernel> CompiledKernels::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kernels_;
}

void CompiledKernels::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  kernels_.clear();
}

}  // namespace proton
