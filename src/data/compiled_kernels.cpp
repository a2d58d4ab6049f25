#include "data/compiled_kernels.h"

#include <algorithm>
#include <vector>

namespace proton {

namespace {

bool same_kernel(std::string_view compiled, std::string_view node_name) {
  if (compiled == node_name) return true;
  size_t cut = node_name.find_first_of("[ ");
  return cut != std::string_view::npos && node_name.substr(0, cut) == compiled;
}

// The block size is exact: a launch of `num_warps` warps has that many threads.
bool same_block(const CompiledKernel& k, const LaunchFacts& f, uint32_t warp_size) {
  if (!f.known() || k.num_warps <= 0) return true;
  uint64_t threads =
      uint64_t{f.block[0]} * std::max<uint16_t>(f.block[1], 1) * std::max<uint16_t>(f.block[2], 1);
  return threads == static_cast<uint64_t>(k.num_warps) * warp_size;
}

// Registers and dynamic shared memory only tell variants of one block size apart: what the
// GPU's record says may differ from the compiler's count (the driver rounds registers to its
// allocation unit, a launcher may ask for more shared memory than the kernel declares).
bool same_resources(const CompiledKernel& k, const LaunchFacts& f) {
  if (!f.known()) return true;
  if (k.n_regs >= 0 && static_cast<uint64_t>(k.n_regs) != f.registers_per_thread) return false;
  return k.shared_bytes < 0 || static_cast<uint64_t>(k.shared_bytes) == f.dynamic_shared_bytes;
}

// The one distinct kernel of `fits` that `keep` accepts; nullptr when none or several do.
template <typename Keep>
const CompiledKernel* only(const std::vector<const CompiledKernel*>& fits, Keep keep) {
  const CompiledKernel* found = nullptr;
  for (const CompiledKernel* k : fits) {
    if (!keep(*k)) continue;
    if (found != nullptr && !(*found == *k)) return nullptr;
    found = k;
  }
  return found;
}

}  // namespace

const CompiledKernel* match_compiled(std::span<const CompiledKernel> kernels,
                                     std::string_view node_name, const LaunchFacts& launch,
                                     uint32_t warp_size) {
  std::vector<const CompiledKernel*> fits;
  for (const CompiledKernel& k : kernels) {
    if (same_kernel(k.name, node_name) && same_block(k, launch, warp_size)) fits.push_back(&k);
  }
  if (const CompiledKernel* k = only(fits, [](const CompiledKernel&) { return true; })) return k;
  return only(fits, [&](const CompiledKernel& k) { return same_resources(k, launch); });
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
