// Which kernels are collectives (NCCL's, RCCL's): the engine measures their exposed time, and
// the analyzer reads their time as communication, mostly waiting for other ranks, rather than
// as compute to tune.
#pragma once

#include <string_view>

namespace proton::format {

/// Whether a kernel name is a collective's: NCCL's kernels ("ncclKernel_AllReduce_RING_LL_Sum_
/// float", "ncclDevKernel_Generic"), anything naming nccl in any case (a wrapped or demangled
/// name may put it anywhere), and RCCL's, which share the prefix.
inline bool is_collective_kernel(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    if ((name[i] | 0x20) == 'n' && (name[i + 1] | 0x20) == 'c' && (name[i + 2] | 0x20) == 'c' &&
        (name[i + 3] | 0x20) == 'l')
      return true;
  }
  return false;
}

}  // namespace proton::format
