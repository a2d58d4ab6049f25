// spills: kernels whose threads keep values in local memory. Two witnesses, joined when both
// are there: the GPU's record of the launch (local_bytes_per_thread: register spills, or arrays
// the compiler could not keep in registers), from kMinLocalBytes, below which are the small
// arrays of math routines in kernels that never spill; and the compiled Triton kernel's own
// count (triton_n_spills: the driver's local size in 4-byte words), from kMinSpilledRegisters.
// With the compiled kernel's facts the advice names its num_warps, num_stages and BLOCK sizes.
#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/launch_model.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/kernel_facts.h"

namespace proton::analysis {

namespace {

namespace names = format::kernel_facts;

// "BLOCK_M=128, BLOCK_N=256": the tile sizes of a config text ("BLOCK_M=128, num_warps=4").
std::string block_sizes(std::string_view config) {
  std::string out;
  size_t at = 0;
  while (at < config.size()) {
    size_t end = config.find(", ", at);
    std::string_view part = config.substr(at, end == std::string_view::npos ? end : end - at);
    if (part.find("BLOCK") != std::string_view::npos) {
      if (!out.empty()) out += ", ";
      out += part;
    }
    if (end == std::string_view::npos) break;
    at = end + 2;
  }
  return out;
}

// What to lower, in the compiled kernel's own numbers where the profile has them.
std::string advice(double num_warps, double num_stages, std::string_view config) {
  std::string out = "Lower the register pressure so fewer values are live at once: ";
  std::string blocks = block_sizes(config);
  out += num_warps > 0 ? "spread the same tile over more threads (num_warps " + count(num_warps) +
                             " -> " + count(2 * num_warps) + "), "
                       : "spread the same tile over more threads (more num_warps), ";
  out += blocks.empty() ? "use smaller tiles (BLOCK sizes) "
                        : "use smaller tiles (halve one of " + blocks + ") ";
  out += num_stages > 1 ? "or fewer pipeline stages (num_stages " + count(num_stages) + " -> " +
                              count(num_stages - 1) + ")."
                        : "or fewer pipeline stages (num_stages).";
  if (num_warps > 0) {
    out += " Check each candidate's n_spills on its compiled kernel (0 is the goal).";
  } else {
    out +=
        " Triton's compiled kernel reports its spills (n_spills) and registers (n_regs) for "
        "each config.";
  }
  return out;
}

}  // namespace

std::vector<Finding> spills(const ProfileView& view) {
  LaunchMetrics ids(view);
  int32_t time = view.find_metric("time (ns)");
  int32_t spilled_id = view.find_metric(names::kSpills);
  bool runtime_facts = ids.any() && ids.local >= 0;
  if ((!runtime_facts && spilled_id < 0) || time < 0) return {};
  int32_t count_id = view.find_metric("count");
  int32_t regs_id = view.find_metric(names::kRegs);
  int32_t warps_id = view.find_metric(names::kNumWarps);
  int32_t stages_id = view.find_metric(names::kNumStages);
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (auto [node, t] : significant_kernels(view)) {
    // The launch's record, copied out (GCC cannot follow an optional through the branches).
    bool shaped = false;
    double local = kNoValue, launch_regs = kNoValue, threads = kNoValue;
    if (runtime_facts) {
      if (auto shape = launch_shape(view, ids, node)) {
        shaped = true;
        local = shape->local_bytes_per_thread;
        launch_regs = shape->registers_per_thread;
        threads = shape->threads_per_block;
      }
    }
    double spilled = view.value(node, spilled_id);
    bool at_run = local >= kMinLocalBytes;
    bool compiled = spilled >= kMinSpilledRegisters;
    if (!at_run && !compiled) continue;
    double num_warps = view.value(node, warps_id);
    double num_stages = view.value(node, stages_id);
    std::string_view config = view.text(node, names::kConfig);
    Finding f = finding_at(view, "spills", node);
    if (shaped) {
      f.number("local_bytes_per_thread", local);
      f.number("registers_per_thread", launch_regs);
      f.number("threads_per_block", threads);
    }
    if (!std::isnan(spilled)) f.number("n_spills", spilled);
    double regs = view.value(node, regs_id);
    if (!std::isnan(regs)) f.number("n_regs", regs);
    if (!std::isnan(num_warps)) f.number("num_warps", num_warps);
    if (!std::isnan(num_stages)) f.number("num_stages", num_stages);
    if (!config.empty()) f.word("config", std::string(config));
    std::string_view source = view.text(node, names::kSource);
    if (!source.empty()) f.word("source", std::string(source));
    f.number("time_ns", t);
    if (total > 0) f.number("time_share", t / total);
    double c = view.value(node, count_id);
    if (c > 0) f.number("count", c);
    // No honest time at stake (what a spill costs depends on how often the value is reloaded);
    // severity from the kernel's share of the time, at most medium.
    f.severity = std::max(severity_for(t, total), Severity::kMedium);
    std::string share = total > 0 ? " (" + percent(t / total) + " of the kernel time)" : "";
    if (compiled) {
      double r = std::isnan(regs) ? launch_regs : regs;
      f.seen =
          "The compiler spilled " + count(spilled) + " registers per thread of this kernel" +
          (std::isnan(r) ? "" : " beside its " + count(r) + " registers") +
          (config.empty() ? "" : " (config " + std::string(config) + ")") +
          (at_run ? ", and its launches kept " + kilobytes(local) + " per thread in local memory"
                  : "") +
          "; " + duration(t) + " in this kernel" + share + ".";
    } else {
      f.seen = "Each thread keeps " + kilobytes(local) +
               " in local memory (register spills or local arrays) beside its " +
               count(launch_regs) + " registers; " + duration(t) + " in this kernel" + share + ".";
    }
    f.why =
        "Local memory is device memory behind the L1 cache: every spilled value is a store and "
        "a later load with hundreds of cycles of latency instead of a register read, and the "
        "traffic competes with the kernel's own loads.";
    f.suggestion = advice(num_warps, num_stages, config);
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
