#include "analysis/rule_support.h"

#include <cmath>
#include <cstdio>

#include "format/collective_kernels.h"

namespace proton::analysis {

double total_kernel_time(const ProfileView& view) {
  int32_t time = view.find_metric("time (ns)");
  if (time < 0 || view.nodes.empty()) return 0;
  double total = view.kernel_sum(time)[0];
  return std::isnan(total) ? 0 : total;
}

Severity severity_for(double saving_ns, double total_ns) {
  if (!(total_ns > 0)) return Severity::kLow;
  double share = saving_ns / total_ns;
  if (share >= kHighShare) return Severity::kHigh;
  if (share >= kMediumShare) return Severity::kMedium;
  return Severity::kLow;
}

std::string kernel_family(const std::string& name) {
  return name.substr(0, name.find_first_of("[ "));
}

bool significant_kernel_time(double time_ns, double total_ns) {
  return time_ns >= kMinKernelTimeNs && time_ns >= kSignificantKernelShare * total_ns;
}

bool is_collective(const ProfileView& view, int32_t node) {
  const auto& n = view.nodes[static_cast<size_t>(node)];
  return n.is_kernel() && format::is_collective_kernel(n.name);
}

std::vector<TimedKernel> significant_kernels(const ProfileView& view) {
  std::vector<TimedKernel> out;
  int32_t time = view.find_metric("time (ns)");
  if (time < 0) return out;
  double total = total_kernel_time(view);
  for (size_t i = 0; i < view.nodes.size(); ++i) {
    auto node = static_cast<int32_t>(i);
    double t = view.value(node, time);
    if (view.nodes[i].is_kernel() && significant_kernel_time(t, total) &&
        !is_collective(view, node))
      out.push_back({node, t});
  }
  return out;
}

std::string kilobytes(double bytes) {
  if (bytes < 1024) return count(bytes) + " B";
  double kb = bytes / 1024;
  return (kb == std::floor(kb) ? count(kb) : fixed(kb, 1)) + " KB";
}

Finding finding_at(const ProfileView& view, const char* rule, int32_t node) {
  Finding f;
  f.rule = rule;
  f.node = node;
  f.frame = view.path(node);
  return f;
}

std::string duration(double ns) {
  char buf[64];
  double a = std::fabs(ns);
  if (a >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.3g s", ns / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3g ms", ns / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.3g us", ns / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g ns", ns);
  }
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double share) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%%", share * 100);
  return buf;
}

std::string count(double n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", std::floor(n));
  std::string digits = buf;
  size_t start = digits[0] == '-' ? 1 : 0;
  for (auto i = static_cast<ptrdiff_t>(digits.size()) - 3; i > static_cast<ptrdiff_t>(start);
       i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

}  // namespace proton::analysis
