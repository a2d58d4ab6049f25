// sync_copy: copies between host and device that block the host, made again and again: copies
// from or to pageable memory (the driver stages them through a pinned buffer of its own, with
// the host waiting), and synchronous copies (cudaMemcpy, a blocking tensor.cuda()).
//
// A pageable copy's time above what the same bytes take from pinned memory
// (kPinnedCopyBytesPerS) is the saving of pinning alone; an asynchronous copy of pinned memory
// also frees the host, and hides the transfer behind compute where there is some, which no
// profile of the blocking copy can measure. A synchronous copy of pinned memory has no estimate.
// Device-to-host reads of a few bytes are host_sync's (their time is a wait, not a transfer).
#include <algorithm>
#include <string>
#include <vector>

#include "analysis/host_call_nodes.h"
#include "analysis/rule_support.h"
#include "analysis/rules.h"

namespace proton::analysis {

namespace {

// "512 B", "12.5 KB", "64.0 MB", "2.0 GB" (1,024-based, as tensors are sized).
std::string size_text(double bytes) {
  if (bytes < 1024 * 1024) return kilobytes(bytes);
  if (bytes < 1024.0 * 1024 * 1024) return fixed(bytes / (1024 * 1024), 1) + " MB";
  return fixed(bytes / (1024.0 * 1024 * 1024), 1) + " GB";
}

}  // namespace

std::vector<Finding> sync_copy(const ProfileView& view) {
  const double total = total_kernel_time(view);
  std::vector<Finding> found;
  for (const HostCallNode& h : host_call_nodes(view)) {
    if (!h.copy || reads_back(h) || h.calls < kMinHostCalls) continue;
    Finding f = finding_at(view, "sync_copy", h.caller);
    f.word("copy", h.api)
        .word("host_memory", h.pageable ? "pageable" : "pinned or device")
        .number("calls", h.calls)
        .number("bytes", h.bytes)
        .number("blocked_ns", h.time_ns);
    std::string rate;
    if (h.bytes > 0) {
      double per_s = h.bytes / (h.time_ns * 1e-9);
      f.number("bytes_per_s", per_s);
      rate = " (" + fixed(per_s / 1e9, 1) + " GB/s)";
    }
    f.seen = count(h.calls) + " " + (h.pageable ? "pageable" : "blocking") + " copies (" + h.api +
             ") moved " + size_text(h.bytes) + " in " + duration(h.time_ns) + rate +
             ", the host waiting throughout.";
    if (h.pageable) {
      double pinned_ns = h.bytes / kPinnedCopyBytesPerS * 1e9;
      f.number("pinned_estimate_ns", pinned_ns);
      if (h.time_ns > pinned_ns) f.saving_ns = h.time_ns - pinned_ns;
      f.why =
          "Pageable memory is copied through a staging buffer while the host waits; from "
          "pinned memory the copy runs at full speed (~" +
          fixed(kPinnedCopyBytesPerS / 1e9, 0) +
          " GB/s assumed) and, asynchronous, "
          "overlaps the host's and the GPU's work.";
    } else {
      f.why =
          "A synchronous copy holds the host until the transfer (and the work queued before "
          "it) is done; an asynchronous one lets it queue more work meanwhile.";
    }
    f.severity = f.saving_ns ? severity_for(*f.saving_ns, total)
                             : std::max(Severity::kMedium, severity_for(h.time_ns, total));
    if (h.device_to_host) {
      f.suggestion =
          "Copy into a pinned buffer without blocking (buf = torch.empty(..., pin_memory=True); "
          "buf.copy_(x, non_blocking=True)) and wait on a torch.cuda.Event only where the host "
          "reads the values.";
    } else {
      f.suggestion =
          "Pin the host tensors (tensor.pin_memory(), DataLoader(pin_memory=True)) and copy with "
          ".cuda(non_blocking=True) / .to(device, non_blocking=True): the copy then runs on the "
          "copy engine while the host queues more work.";
    }
    found.push_back(std::move(f));
  }
  return found;
}

}  // namespace proton::analysis
