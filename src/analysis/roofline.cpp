// roofline: kernels far below the roofline of their device, from the FLOPs and bytes a
// launch_metadata declared ("flops8/16/32/64", "bytes") and the device's peaks.
//
// The shortest time a kernel's work could take is the larger of FLOPs / peak FLOP/s (per operand
// width) and bytes / peak bandwidth; which one is larger names the bound resource. The kernel
// reached (shortest time / measured time) of that roofline; the time at stake is what is left
// above kAttainableShare of it.
#include <array>
#include <cmath>
#include <string>

#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

constexpr std::array<int, 4> kWidths{8, 16, 32, 64};

}  // namespace

std::vector<Finding> roofline(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  if (time < 0) return {};
  std::array<int32_t, 4> flops_ids{};
  for (size_t w = 0; w < kWidths.size(); ++w)
    flops_ids[w] = view.find_metric("flops" + std::to_string(kWidths[w]));
  int32_t bytes_id = view.find_metric("bytes");
  int32_t count_id = view.find_metric("count");
  double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    const ViewNode& n = view.nodes[i];
    auto node = static_cast<int32_t>(i);
    double t = view.value(node, time);
    if (!n.is_kernel() || !(t >= kMinKernelTimeNs)) continue;
    const ViewDevice* device = view.device(n.device_type, n.device_id);
    if (device == nullptr) continue;
    double flops = 0, flop_ns = 0;
    int width = 0;
    double flop_peak = 0;  // of the widest operands declared
    bool known = true;
    for (size_t w = 0; w < kWidths.size(); ++w) {
      double f = view.value(node, flops_ids[w]);
      if (!(f > 0)) continue;
      if (!(device->peak_flops_per_s[w] > 0)) known = false;
      flops += f;
      flop_ns += f / device->peak_flops_per_s[w] * 1e9;
      width = kWidths[w];
      flop_peak = device->peak_flops_per_s[w];
    }
    double bytes = view.value(node, bytes_id);
    double byte_ns = 0;
    if (bytes > 0) {
      if (!(device->peak_bytes_per_s > 0)) known = false;
      byte_ns = bytes / device->peak_bytes_per_s * 1e9;
    }
    if (!known || (flops <= 0 && !(bytes > 0))) continue;
    double ideal = std::max(flop_ns, byte_ns);
    double reached = ideal / t;
    if (reached >= kLowPeakShare) continue;
    bool memory = byte_ns >= flop_ns;
    Finding f = finding_at(view, "roofline", node);
    f.word("bound", memory ? "memory" : "compute");
    f.number("time_ns", t);
    double c = view.value(node, count_id);
    if (c > 0) f.number("count", c);
    if (flops > 0) {
      f.number("flops", flops).number("flop_width_bits", width);
      f.number("achieved_flops_per_s", flops / t * 1e9);
    }
    if (bytes > 0) f.number("bytes", bytes).number("achieved_bytes_per_s", bytes / t * 1e9);
    if (flops > 0 && bytes > 0) f.number("flops_per_byte", flops / bytes);
    f.number("roofline_time_ns", ideal).number("share_of_peak", reached);
    f.saving_ns = std::max(0.0, t - ideal / kAttainableShare);
    f.severity = severity_for(*f.saving_ns, total);
    std::string resource = memory ? "memory bandwidth" : "tensor-core throughput";
    // The achieved rate against the peak, in the bound resource's unit.
    std::string rate =
        memory ? count(bytes / t) + " of " + count(device->peak_bytes_per_s / 1e9) + " GB/s"
               : fixed(flops / t / 1e3, 1) + " TFLOP/s (" + std::to_string(width) + "-bit peak " +
                     fixed(flop_peak / 1e12, 1) + ")";
    f.seen = std::string(memory ? "Memory-bound" : "Compute-bound") + " kernel at " +
             percent(reached) + " of peak " + resource + " (" + duration(t) + " measured, " +
             duration(ideal) + " at peak; " + rate + ").";
    f.why = "At " + percent(kAttainableShare) + " of peak, which tuned kernels reach, it would " +
            "take " + duration(ideal / kAttainableShare) + ": " + duration(*f.saving_ns) + " less.";
    f.suggestion =
        memory ? "Move fewer bytes: fuse it with the kernels that produce or consume its data, "
                 "keep reused tiles in shared memory or L2 (tile swizzling), use wider "
                 "contiguous loads; check that the launch_metadata 'bytes' counts what it moves."
               : "Keep the tensor cores fed: larger tiles (BLOCK_M/N/K), more pipeline stages "
                 "(num_stages), lower-precision operands (bf16/fp8) where accuracy allows; "
                 "check that the launch_metadata 'flops' width matches the operands.";
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
