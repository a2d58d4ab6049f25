// occupancy: kernels whose blocks leave most of an SM's warp slots empty, from the launch facts
// (block size, registers per thread, shared memory per block) against the device's SM limits
// (launch_model.h). Names the resource that caps the blocks per SM and how much of it one more
// block would need.
#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/launch_model.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

// The limit in words, with the numbers that make it bind.
std::string limit_words(Limiter l, const ViewDevice& d, const LaunchShape& s, const Occupancy& o) {
  switch (l) {
    case Limiter::kSharedMemory:
      return "shared memory (" + kilobytes(s.shared_bytes_per_block) + " per block of " +
             kilobytes(d.shared_memory_per_sm) + " per SM)";
    case Limiter::kRegisters:
      return "registers (" + count(s.registers_per_thread) + " per thread, " +
             count(s.registers_per_thread * s.threads_per_block) + " per block of " +
             count(d.registers_per_sm) + " per SM)";
    case Limiter::kBlocksPerSm:
      return "the SM's limit of " + count(d.max_blocks_per_sm) + " blocks";
    case Limiter::kBlockSize:
      return "the block size (" + count(o.warps_per_block) + " warps of the SM's " +
             count(o.max_warps) + ")";
  }
  return "";
}

// What to change so that one more block fits, for one binding limit.
std::string change_for(Limiter l, const ViewDevice& d, const LaunchShape& s, const Occupancy& o) {
  double next = o.blocks_per_sm + 1;
  std::string blocks = count(next) + " blocks per SM";
  switch (l) {
    case Limiter::kSharedMemory: {
      double budget = shared_bytes_for_blocks(d, next);
      std::string how = "fewer pipeline stages (num_stages) or smaller tiles (BLOCK_M/N/K)";
      if (!(budget > 0)) return "use less shared memory per block: " + how;
      return "use at most " + kilobytes(budget) + " of shared memory per block (now " +
             kilobytes(s.shared_bytes_per_block) + ") for " + blocks + ": " + how;
    }
    case Limiter::kRegisters: {
      double budget = registers_for_blocks(d, s, next);
      std::string how =
          "smaller tiles or fewer values live at once (smaller BLOCK sizes, fewer num_stages); "
          "a register cap (maxnreg, __launch_bounds__) trades them for spills";
      if (!(budget > 0)) return "use fewer threads per block or fewer registers: " + how;
      return "use at most " + count(budget) + " registers per thread (now " +
             count(s.registers_per_thread) + ") for " + blocks + ": " + how;
    }
    case Limiter::kBlocksPerSm: {
      double threads = std::ceil(o.max_warps / d.max_blocks_per_sm) * d.warp_size;
      return "launch blocks of at least " + count(threads) + " threads (now " +
             count(s.threads_per_block) + "): more num_warps or a larger BLOCK per program";
    }
    case Limiter::kBlockSize:
      return "pick a block size whose warps divide the SM's " + count(o.max_warps) + " (now " +
             count(o.warps_per_block) + " per block)";
  }
  return "";
}

}  // namespace

std::vector<Finding> occupancy(const ProfileView& view) {
  LaunchMetrics ids(view);
  if (!ids.any()) return {};
  int32_t count_id = view.find_metric("count");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (auto [node, t] : significant_kernels(view)) {
    const ViewNode& n = view.nodes[static_cast<size_t>(node)];
    const ViewDevice* d = view.device(n.device_type, n.device_id);
    auto shape = launch_shape(view, ids, node);
    if (d == nullptr || !shape) continue;
    auto o = theoretical_occupancy(*d, *shape);
    if (!o || o->share > kLowOccupancy) continue;
    const LaunchShape& s = *shape;
    Finding f = finding_at(view, "occupancy", node);
    f.number("occupancy", o->share).number("active_warps", o->active_warps);
    f.number("max_warps", o->max_warps).number("blocks_per_sm", o->blocks_per_sm);
    f.word("limiter", limiter_id(o->limiter));
    std::string binding, limits, changes;
    for (Limiter l : kLimiters) {
      if (!o->binds(l)) continue;
      binding += (binding.empty() ? "" : ",") + std::string(limiter_id(l));
      limits += (limits.empty() ? "" : " and ") + limit_words(l, *d, s, *o);
      changes += (changes.empty() ? "" : "; and ") + change_for(l, *d, s, *o);
    }
    f.word("binding", binding);
    f.number("threads_per_block", s.threads_per_block);
    f.number("registers_per_thread", s.registers_per_thread);
    f.number("shared_bytes_per_block", s.shared_bytes_per_block);
    for (Limiter l : kLimiters) {
      if (o->by(l) < Occupancy::kUnlimited) {
        f.number(std::string("blocks_by_") + limiter_id(l), o->by(l));
      }
    }
    f.number("time_ns", t);
    double c = view.value(node, count_id);
    if (c > 0) f.number("count", c);
    // No time at stake: more warps help only where warps wait. Severity from the kernel's
    // share of the time, at most medium, and low above kVeryLowOccupancy.
    f.severity = std::max(severity_for(t, total), Severity::kMedium);
    if (o->share > kVeryLowOccupancy) f.severity = Severity::kLow;
    f.seen = "Theoretical occupancy " + percent(o->share) + " (" + count(o->active_warps) + " of " +
             count(o->max_warps) + " warps per SM): " + count(o->blocks_per_sm) +
             (o->blocks_per_sm == 1 ? " block" : " blocks") + " of " + count(s.threads_per_block) +
             " threads per SM, limited by " + limits + "; " + duration(t) + " in this kernel.";
    f.why =
        "Fewer resident warps leave the SM less to switch to while warps wait on memory or on "
        "each other, so a latency-bound kernel slows down. Kernels that keep the tensor cores "
        "busy with large tiles can run well this way: check its roofline and stall findings "
        "before trading tile size for warps.";
    f.suggestion = "To fit another block, " + changes + ".";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
