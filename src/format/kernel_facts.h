// The Hatchet names of what a kernel node carries beside its launch facts (launch_facts.h):
// the spread of its launch times, and the facts of the compiled Triton kernel it ran. Like the
// launch facts they are "pty" in the root's "metric_rules" and not among the root's columns, so
// Hatchet and Triton's viewer keep them per node, unsummed; the analyzer reads them by name.
#pragma once

namespace proton::format::kernel_facts {

// The shortest and longest launch of the node (ns).
inline constexpr const char* kTimeMin = "time_min (ns)";
inline constexpr const char* kTimeMax = "time_max (ns)";

// The compiled Triton kernel (numbers; written only where Triton gave them).
inline constexpr const char* kNumWarps = "triton_num_warps";
inline constexpr const char* kNumStages = "triton_num_stages";
inline constexpr const char* kNumCtas = "triton_num_ctas";
inline constexpr const char* kShared = "triton_shared_bytes";
inline constexpr const char* kRegs = "triton_n_regs";
inline constexpr const char* kSpills = "triton_n_spills";
// Strings: "BLOCK_M=64, num_warps=4, num_stages=3" and "kernels.py:42".
inline constexpr const char* kConfig = "triton_config";
inline constexpr const char* kSource = "triton_source";

}  // namespace proton::format::kernel_facts
