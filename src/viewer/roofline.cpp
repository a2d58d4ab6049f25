#include "viewer/roofline.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "viewer/errors.h"
#include "viewer/peak_table.h"

namespace proton::viewer {

namespace {

constexpr std::string_view kWeighted = " (ns-weighted)";
constexpr const char* kRead = "dram__bytes_read.sum";
constexpr const char* kWrite = "dram__bytes_write.sum";

// SASS instruction counters that give FLOPs: (metric, flops per thread instruction).
struct FlopCounter {
  const char* metric;
  double flops;
};
constexpr FlopCounter kFlopCounters[] = {
    {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2},
    {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 2},
    {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2},
    {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", 1},
    {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", 1},
};

[[noreturn]] void needs(std::string_view request, std::string_view what) {
  throw UsageError("metric '" + std::string(request) + "' needs " + std::string(what) +
                   ", which the profile does not have (profile with mode=\"counters\"; see "
                   "docs/counters.md)");
}

double add(double a, double b) {
  if (is_absent(a)) return b;
  if (is_absent(b)) return a;
  return a + b;
}

// Inclusive sum of several metrics (absent ones skipped); all NaN when none exists.
std::vector<double> summed(const Profile& p, std::initializer_list<const char*> names, bool& any) {
  std::vector<double> out(p.nodes.size(), kAbsent);
  any = false;
  for (const char* n : names) {
    int32_t m = p.find_metric(n);
    if (m < 0) continue;
    any = true;
    auto v = p.inclusive(m);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = add(out[i], v[i]);
  }
  return out;
}

// Seconds of kernel time the counters cover, per node: "counter time (ns)" when present (only
// launches with values), else all kernel time.
std::vector<double> counted_seconds(const Profile& p, std::string_view request) {
  int32_t m = p.find_metric("counter time (ns)");
  if (m < 0) m = p.find_metric("time (ns)");
  if (m < 0) needs(request, "kernel time");
  auto v = p.inclusive(m);
  for (double& x : v)
    x *= 1e-9;
  return v;
}

std::vector<double> dram_bytes(const Profile& p, std::string_view request) {
  bool any = false;
  auto bytes = summed(p, {kRead, kWrite}, any);
  if (!any) needs(request, std::string("'") + kRead + "' / '" + kWrite + "'");
  return bytes;
}

std::vector<double> sass_flops(const Profile& p, std::string_view request) {
  std::vector<double> out(p.nodes.size(), kAbsent);
  bool any = false;
  for (const FlopCounter& c : kFlopCounters) {
    int32_t m = p.find_metric(c.metric);
    if (m < 0) continue;
    any = true;
    auto v = p.inclusive(m);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = add(out[i], is_absent(v[i]) ? kAbsent : v[i] * c.flops);
  }
  if (!any) needs(request, "SASS instruction counters (sm__sass_thread_inst_executed_op_*)");
  return out;
}

std::vector<double> declared(const Profile& p, bool flops) {
  std::vector<double> out(p.nodes.size(), kAbsent);
  std::vector<std::string> names;
  if (flops) {
    for (int w : {8, 16, 32, 64})
      names.push_back("flops" + std::to_string(w));
    names.push_back("flops");
  } else {
    names.push_back("bytes");
  }
  for (const std::string& n : names) {
    int32_t m = p.find_metric(n);
    if (m < 0) continue;
    auto v = p.inclusive(m);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = add(out[i], v[i]);
  }
  return out;
}

Column rate_column(std::string header, const std::vector<double>& amount,
                   const std::vector<double>& seconds, double scale) {
  Column c;
  c.header = std::move(header);
  c.values.resize(amount.size());
  for (size_t i = 0; i < amount.size(); ++i)
    c.values[i] =
        seconds[i] > 0 && !is_absent(amount[i]) ? amount[i] / seconds[i] / scale : kAbsent;
  return c;
}

}  // namespace

double mismatch(double declared_value, double measured, double factor) {
  if (is_absent(declared_value) || is_absent(measured) || declared_value <= 0 || measured <= 0) {
    return kAbsent;
  }
  double ratio = declared_value / measured;
  return ratio > factor || ratio < 1.0 / factor ? ratio : kAbsent;
}

std::optional<Column> counter_column(const Profile& p, std::string_view request,
                                     std::vector<std::string>& warnings) {
  // A time-weighted counter by its own name.
  for (const MetricInfo& info : p.metrics) {
    std::string_view name = info.name;
    if (!name.ends_with(kWeighted) || name.substr(0, name.size() - kWeighted.size()) != request) {
      continue;
    }
    int32_t num = p.find_metric(name);
    int32_t den =
        p.find_metric(request.starts_with("pm:") ? "pm:counter time (ns)" : "counter time (ns)");
    if (den < 0) needs(request, "'counter time (ns)'");
    auto n = p.inclusive(num);
    auto d = p.inclusive(den);
    Column c;
    c.header = std::string(request);
    c.values.resize(n.size());
    for (size_t i = 0; i < n.size(); ++i)
      c.values[i] = d[i] > 0 && !is_absent(n[i]) ? n[i] / d[i] : kAbsent;
    return c;
  }
  for (auto [stem, scale] : {std::pair{"dram_byte/s", 1.0}, std::pair{"dram_gbyte/s", 1e9},
                             std::pair{"dram_tbyte/s", 1e12}}) {
    if (request == stem) {
      return rate_column(std::string(request), dram_bytes(p, request), counted_seconds(p, request),
                         scale);
    }
  }
  for (auto [stem, scale] : {std::pair{"sass_flop/s", 1.0}, std::pair{"sass_gflop/s", 1e9},
                             std::pair{"sass_tflop/s", 1e12}}) {
    if (request == stem) {
      return rate_column(std::string(request), sass_flops(p, request), counted_seconds(p, request),
                         scale);
    }
  }
  if (request == "dram_peak%") {
    // Per kernel: the shortest time its DRAM bytes could take at the device's peak; summed
    // over the subtree and divided by the counted time, as util does for declared bytes.
    auto bytes = dram_bytes(p, request);
    std::vector<double> stored_bytes(p.nodes.size(), kAbsent);
    for (const char* n : {kRead, kWrite}) {
      int32_t m = p.find_metric(n);
      if (m < 0) continue;
      auto v = p.stored(m);
      for (size_t i = 0; i < v.size(); ++i)
        stored_bytes[i] = add(stored_bytes[i], v[i]);
    }
    std::vector<double> min_time(p.nodes.size(), kAbsent);
    std::set<std::string> unknown;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      if (!p.nodes[i].is_kernel() || is_absent(stored_bytes[i])) continue;
      const DeviceInfo* d =
          p.device(p.nodes[i].text_of("device_type"), p.nodes[i].text_of("device_id"));
      auto peak = d == nullptr ? std::nullopt : peak_for(*d, 8);
      if (!peak || peak->bytes_per_s <= 0) {
        unknown.insert(d == nullptr ? "a device not in the device map" : "arch '" + d->arch + "'");
        continue;
      }
      min_time[i] = stored_bytes[i] / peak->bytes_per_s;
    }
    for (const std::string& u : unknown)
      warnings.push_back("dram_peak%: no peak bandwidth for " + u + "; its kernels are left out");
    min_time = roll_up(p, std::move(min_time));
    auto seconds = counted_seconds(p, request);
    Column c;
    c.header = "dram_peak%";
    c.values.resize(min_time.size());
    for (size_t i = 0; i < min_time.size(); ++i)
      c.values[i] =
          seconds[i] > 0 && !is_absent(min_time[i]) ? 100.0 * min_time[i] / seconds[i] : kAbsent;
    return c;
  }
  if (request == "l2_hit%") {
    // Estimated: sectors the L2 served minus those it had to read from DRAM (32-byte sectors).
    // The exact lts__t_sector_hit_rate.pct needs two passes on Hopper (docs/counters.md).
    int32_t sectors = p.find_metric("lts__t_sectors.sum");
    int32_t read = p.find_metric(kRead);
    if (sectors < 0 || read < 0)
      needs(request, "'lts__t_sectors.sum' and '" + std::string(kRead) + "'");
    auto s = p.inclusive(sectors);
    auto r = p.inclusive(read);
    Column c;
    c.header = "l2_hit%";
    c.values.resize(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      c.values[i] = s[i] > 0 && !is_absent(r[i])
                        ? 100.0 * std::clamp(1.0 - r[i] / 32.0 / s[i], 0.0, 1.0)
                        : kAbsent;
    }
    return c;
  }
  if (request == "bytes_mismatch" || request == "flops_mismatch") {
    bool flops = request == "flops_mismatch";
    auto mine = declared(p, flops);
    auto measured = flops ? sass_flops(p, request) : dram_bytes(p, request);
    Column c;
    c.header = std::string(request);
    c.values.resize(mine.size());
    for (size_t i = 0; i < mine.size(); ++i)
      c.values[i] = mismatch(mine[i], measured[i]);
    return c;
  }
  return std::nullopt;
}

std::vector<std::string> expand_roofline(const Profile& p) {
  std::vector<std::string> out = {"time/ms"};
  bool dram = p.find_metric(kRead) >= 0 || p.find_metric(kWrite) >= 0;
  bool declared_bytes = p.find_metric("bytes") >= 0;
  bool declared_flops = false;
  for (const char* n : {"flops", "flops8", "flops16", "flops32", "flops64"})
    declared_flops = declared_flops || p.find_metric(n) >= 0;
  bool sass = false;
  for (const FlopCounter& c : kFlopCounters)
    sass = sass || p.find_metric(c.metric) >= 0;
  if (declared_bytes) out.push_back("gbyte/s");
  if (dram) {
    out.push_back("dram_gbyte/s");
    out.push_back("dram_peak%");
  }
  if (dram && p.find_metric("lts__t_sectors.sum") >= 0) out.push_back("l2_hit%");
  if (declared_flops) out.push_back("tflop/s");
  if (sass) out.push_back("sass_tflop/s");
  if (declared_bytes || declared_flops) out.push_back("util");
  for (const MetricInfo& info : p.metrics) {
    std::string_view name = info.name;
    if (name.ends_with(kWeighted)) out.emplace_back(name.substr(0, name.size() - kWeighted.size()));
  }
  if (declared_bytes && dram) out.push_back("bytes_mismatch");
  if (declared_flops && sass) out.push_back("flops_mismatch");
  return out;
}

}  // namespace proton::viewer
