// Small pieces the rules share: the profile's total kernel time, severity from time at stake,
// keeping the innermost of nested findings, and numbers in words.
#pragma once

#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/profile_view.h"
#include "analysis/rules.h"

namespace proton::analysis {

/// Kernel time of the whole profile ("time (ns)" over kernel nodes), 0 when none.
double total_kernel_time(const ProfileView& view);
/// High, medium or low by `saving_ns` as a share of `total_ns` (rules.h).
Severity severity_for(double saving_ns, double total_ns);
/// A kernel's total time worth a finding on its launch facts: at least kMinKernelTimeNs and
/// kSignificantKernelShare of `total_ns`.
bool significant_kernel_time(double time_ns, double total_ns);
/// A kernel node and its "time (ns)".
struct TimedKernel {
  int32_t node;
  double time_ns;
};
/// A collective's kernel node (NCCL, RCCL: format::is_collective_kernel). Its time is mostly
/// waiting for other ranks: comm_exposed and straggler read it as communication.
bool is_collective(const ProfileView& view, int32_t node);
/// The kernel nodes whose time is significant (significant_kernel_time against the profile's
/// kernel time), in node order: the walk of the rules that judge one kernel at a time (launch
/// shape, spills, time spread). Collectives are left out: their launch shape is the
/// library's choice and their time follows the slowest rank. Empty when the profile has no
/// "time (ns)".
std::vector<TimedKernel> significant_kernels(const ProfileView& view);
/// "12.5 KB", "228 KB", "512 B" (KB = 1,024 bytes, as CUDA states shared memory).
std::string kilobytes(double bytes);
/// A kernel's family: its name up to the first '[' or space ("matmul[BLOCK_M=64]" -> "matmul"),
/// as a launch_metadata name carries a config or shape after it.
std::string kernel_family(const std::string& name);
/// Fills node-dependent fields (frame) of a finding.
Finding finding_at(const ProfileView& view, const char* rule, int32_t node);
/// "2.1 us", "340 ms", "1.2 s".
std::string duration(double ns);
/// `v` with `digits` decimals: "1.50".
std::string fixed(double v, int digits);
/// "12.5%".
std::string percent(double share);
/// A count with thousands separators: "12,800".
std::string count(double n);

/// Drops findings whose node has a descendant finding (of the same list) holding at least
/// kExplainsParentShare of the value `weight` gives it: the inner frame is the cause.
template <class Weight>
std::vector<Finding> innermost(const ProfileView& view, std::vector<Finding> found, Weight weight) {
  // Each finding walks up its own ancestors once: O(findings x depth), not findings squared.
  std::vector<int32_t> finding_of(view.nodes.size(), -1);
  for (size_t i = 0; i < found.size(); ++i)
    finding_of[static_cast<size_t>(found[i].node)] = static_cast<int32_t>(i);
  std::vector<char> explained(found.size(), 0);
  for (const Finding& inner : found) {
    double w = weight(inner);
    for (int32_t a = view.nodes[static_cast<size_t>(inner.node)].parent; a >= 0;
         a = view.nodes[static_cast<size_t>(a)].parent) {
      int32_t outer = finding_of[static_cast<size_t>(a)];
      if (outer >= 0 && w >= kExplainsParentShare * weight(found[static_cast<size_t>(outer)]))
        explained[static_cast<size_t>(outer)] = 1;
    }
  }
  std::vector<Finding> out;
  for (size_t i = 0; i < found.size(); ++i) {
    if (!explained[i]) out.push_back(std::move(found[i]));
  }
  return out;
}

}  // namespace proton::analysis
