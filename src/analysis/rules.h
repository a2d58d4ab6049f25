// The analyzer's rules: each a pure function of a ProfileView returning its findings, in a file
// of its own. Their thresholds are named here, with the reason for each; docs/advise.md lists
// them for users.
#pragma once

#include <vector>

#include "analysis/finding.h"
#include "analysis/profile_view.h"

namespace proton::analysis {

// --- How much a finding weighs: its time at stake as a share of the profile's kernel time.
// A tenth of the GPU time is worth stopping for; under a fiftieth it is noted, not pressed.
inline constexpr double kHighShare = 0.10;
inline constexpr double kMediumShare = 0.02;
// A frame holding this share of its parent's finding explains the parent: only the inner one
// is reported, so one cause is not listed once per enclosing scope.
inline constexpr double kExplainsParentShare = 0.8;

// --- launch_bound: a scope whose kernels are too short to hide the host's launch cost.
// A launch costs the host ~2-5 us (driver and framework); kernels shorter than that leave the
// GPU waiting for the next one unless launches run ahead.
inline constexpr double kShortKernelNs = 10'000;
// Fewer launches than this are a warm-up, not a pattern.
inline constexpr double kMinLaunches = 100;
// The host cost assumed per launch when no CPU time says otherwise (a PyTorch eager op with a
// Triton or ATen kernel: 4-6 us measured on an H100 host; 4 us keeps the estimate low).
inline constexpr double kLaunchCostNs = 4'000;
// With the scope's CPU time (cpu_timed_scope): GPU busy below this share of it is launch-bound.
inline constexpr double kBusyShare = 0.5;

// --- roofline: kernels far below their bound resource's peak (flops*/bytes from
// launch_metadata, peaks from the device map).
// Tuned kernels reach 60-80% of peak bandwidth or tensor throughput; under half is room left.
inline constexpr double kLowPeakShare = 0.5;
// The share of peak a good kernel attains; the time at stake is measured against it, not
// against the unreachable peak.
inline constexpr double kAttainableShare = 0.8;
// Kernels with less total time than this are not worth a finding (sub-ms wins vanish in noise).
inline constexpr double kMinKernelTimeNs = 1e6;

// --- stall_hot_line: source lines holding many PC samples, by dominant stall family.
// A line with a tenth of its kernel's samples is a hot spot; fewer samples than kMinSamples
// are noise at the sampling rate.
inline constexpr double kHotLineShare = 0.10;
inline constexpr double kMinSamples = 50;
// The kernel's hot lines shown: beyond three the advice repeats itself.
inline constexpr int kHotLinesPerKernel = 3;

// --- straggler: frames of a multi-rank merge where the slowest rank is well above the mean.
// 10% above the mean is what collective waits make visible; less is jitter between ranks.
inline constexpr double kStragglerImbalance = 1.10;
// Frames under this share of the run's time are left out (their imbalance costs little).
inline constexpr double kStragglerMinShare = 0.02;

// --- variant_spread: sibling kernels of one name family (a Triton kernel compiled for several
// configs or shapes, named "matmul[BLOCK_M=64]", "matmul[BLOCK_M=128]") compared per unit of
// work (per FLOP or per byte). Half again as slow per unit is more than shape effects explain.
inline constexpr double kVariantSpread = 1.5;

// --- occupancy, spills, tail_effect: a kernel's launch facts (grid, block, registers, shared
// and local memory, recorded from the GPU's kernel records) against its device's SM limits.
// They speak only for kernels that matter: at least kMinKernelTimeNs in all and this share of
// the profile's kernel time (the medium severity's floor: below it a win would be noted, not
// pressed).
inline constexpr double kSignificantKernelShare = 0.02;
// At most half the SM's warps resident: latency-bound code has too few warps to switch to when
// others wait. Above half, more warps rarely help (and block sizes that cannot reach 100% land
// above it); tensor-core kernels with large tiles often run well below it, hence no estimate.
inline constexpr double kLowOccupancy = 0.5;
// A finding on occupancy or spills has no honest time at stake; its severity follows the
// kernel's share of the time, at most medium, and only at or below this occupancy (a quarter of
// the warps) may an occupancy finding be medium.
inline constexpr double kVeryLowOccupancy = 0.25;
// spills: local memory per thread from this many bytes. Kernels that never spill can still
// keep a small array there: the slow path of sin/cos keeps 28 bytes (a 32-byte stack frame,
// seen in Triton kernels compiled for sm_90); a spilling kernel's frame is larger (Triton's
// 8,192-element, one-warp reduction: 176 bytes at 255 registers).
inline constexpr double kMinLocalBytes = 64;
// tail_effect: the share of the kernel's wave time its idle SMs waste. A quarter or more is a
// shape worth changing: it takes under ~4 waves (later waves dilute the last one) or a grid that
// leaves a quarter of the SMs without a block.
inline constexpr double kTailWasteShare = 0.25;
// spills from the compiled kernel (triton_n_spills, the driver's local size in 4-byte words):
// the same floor as kMinLocalBytes, in words.
inline constexpr double kMinSpilledRegisters = kMinLocalBytes / 4;

// --- autotune_spread: sibling variants of one kernel family whose compiled kernels carry their
// config (triton_config), compared per unit of declared work, or per launch where none is
// declared and every variant ran one grid. The spread that makes a config worth dropping is
// variant_spread's.
inline constexpr double kAutotuneSpread = kVariantSpread;

// --- kernel_time_variance: one kernel on one call path whose launches take widely different
// times (the node's count, total, shortest and longest launch). A mean launch half again the
// fastest is more than clock boost and cache warmth explain between launches of one shape; the
// longest at 3x the fastest says the spread is real, not a rounding of short kernels. A single
// cold first launch moves the maximum, not the mean: it alone never fires.
inline constexpr double kVarianceMeanOverMin = 1.5;
inline constexpr double kVarianceMaxOverMin = 3.0;
// Fewer launches than this say little about a spread.
inline constexpr double kVarianceMinLaunches = 20;

// --- region_imbalance: intra-kernel regions (instrumentation) whose slowest warp (or warp
// group) in each CTA spends far longer in the region than the warps that ran it do on average
// (max_warp_cycles over mean_warp_cycles). The CTA finishes with its slowest warp, so the
// region is the critical path. Twice the mean is what a warp-specialized kernel's idle partition
// shows; under 1.5 is warp scheduling jitter.
inline constexpr double kRegionImbalance = 1.5;
// No time at stake in cycles: medium from twice the mean (or a region holding half the
// kernel's region cycles), low below.
inline constexpr double kRegionImbalanceMedium = 2.0;
// Regions with less than this share of their kernel's region cycles are left out.
inline constexpr double kRegionMinShare = 0.10;

// --- host_sync, sync_copy: host calls that blocked the host (synchronizes, synchronous or
// pageable copies), timed by Proton from their API callbacks ("sync_time (ns)", "memcpy_*").
// Fewer calls than this under one frame are setup or the end of a run, not a loop.
inline constexpr double kMinHostCalls = 10;
// A device-to-host copy averaging fewer bytes a call reads values back (.item(), .tolist() of a
// few numbers, print of a tensor): its time is the wait for the GPU, a synchronization.
inline constexpr double kSmallCopyBytes = 64 * 1024;
// After a synchronize the GPU's queue is empty: it idles at least one launch's host cost
// (kLaunchCostNs) until the host queues the next kernel. That is host_sync's estimate per call.
// Host-to-device bandwidth of a pinned copy (PCIe 4.0 x16 in practice; 5.0 doubles it): what a
// pageable copy would still take once pinned. The low end keeps sync_copy's estimate low.
inline constexpr double kPinnedCopyBytesPerS = 25e9;

// --- comm_exposed: a collective (NCCL) kernel node whose GPU time mostly ran with no compute
// kernel beside it on its device ("exposed_comm (ns)", measured from the kernel records). Half
// or more of the collective's time alone is no overlap to speak of: a bucket whose all-reduce
// waits for the end of the backward pass shows ~100%, an overlapped one well under half (its
// first and last buckets are alone whatever the schedule).
inline constexpr double kCommExposedShare = 0.5;
// The exposed time must also be a significant share of the profile's kernel time (at least
// kMinKernelTimeNs and kSignificantKernelShare): below it overlapping would win little.

std::vector<Finding> launch_bound(const ProfileView& view);
std::vector<Finding> roofline(const ProfileView& view);
std::vector<Finding> stall_hot_lines(const ProfileView& view);
std::vector<Finding> stragglers(const ProfileView& view);
std::vector<Finding> variant_spread(const ProfileView& view);
std::vector<Finding> occupancy(const ProfileView& view);
std::vector<Finding> spills(const ProfileView& view);
std::vector<Finding> tail_effect(const ProfileView& view);
std::vector<Finding> autotune_spread(const ProfileView& view);
std::vector<Finding> kernel_time_variance(const ProfileView& view);
std::vector<Finding> region_imbalance(const ProfileView& view);
std::vector<Finding> host_sync(const ProfileView& view);
std::vector<Finding> sync_copy(const ProfileView& view);
std::vector<Finding> comm_exposed(const ProfileView& view);
// What more the profile would need for the rules that found nothing to read ("hint.*").
std::vector<Finding> missing_sources(const ProfileView& view);

}  // namespace proton::analysis
