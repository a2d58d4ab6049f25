#include "viewer/derived_metrics.h"

#include <cmath>
#include <optional>
#include <set>

#include "viewer/errors.h"
#include "viewer/peak_table.h"
#include "viewer/roofline.h"

namespace proton::viewer {

namespace {

constexpr int kFlopWidths[] = {8, 16, 32, 64};

// "time (ns)" -> "ns"; "" when the name has no parenthesised unit.
std::string unit_of(std::string_view name) {
  auto open = name.find('(');
  auto close = name.find(')', open);
  if (open == std::string_view::npos || close == std::string_view::npos) return "";
  return to_lower(trim(name.substr(open + 1, close - open - 1)));
}

std::optional<double> seconds_per(std::string_view unit) {
  if (unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  if (unit == "us") return 1e-6;
  if (unit == "ns") return 1e-9;
  return std::nullopt;
}

std::string speedscope_unit(std::string_view unit) {
  if (unit == "s") return "seconds";
  if (unit == "ms") return "milliseconds";
  if (unit == "us") return "microseconds";
  if (unit == "ns") return "nanoseconds";
  return "none";
}

[[noreturn]] void missing(std::string_view request, std::string_view needs) {
  throw UsageError("metric '" + std::string(request) + "' needs " + std::string(needs) +
                   ", which the profile does not have (use -l to list its metrics)");
}

class Deriver {
 public:
  Deriver(const Profile& profile, std::vector<std::string>& warnings)
      : profile_(profile), warnings_(warnings) {}

  Column derive(const std::string& raw_request) {
    std::string request = to_lower(trim(raw_request));
    if (request.empty()) throw UsageError("empty metric name in -m");
    Column column;
    column.header = request;
    // Hardware-counter columns (roofline.h) first: a time-weighted counter's plain name would
    // otherwise match its stored numerator.
    if (auto counters = counter_column(profile_, request, warnings_)) return std::move(*counters);
    if (request == "util") return util(std::move(column));
    if (request.size() > 2 && request.ends_with("/%")) {
      return percent(std::move(column), request.substr(0, request.size() - 2));
    }
    if (auto rate_column = rate(column, request)) return std::move(*rate_column);
    if (auto time_column = time_conversion(column, request)) return std::move(*time_column);
    int32_t metric = match_metric(profile_, request);
    if (metric < 0) {
      throw UsageError("metric '" + raw_request +
                       "' is not in the profile (use -l to list its metrics)");
    }
    const MetricInfo& info = profile_.metrics[static_cast<size_t>(metric)];
    column.header = info.name;
    column.values = profile_.inclusive(metric);
    column.integral = info.integral;
    column.additive = info.kind == MetricKind::kInclusive;
    column.unit = speedscope_unit(unit_of(info.name));
    return column;
  }

 private:
  // Time in seconds per node (inclusive), or fails.
  std::vector<double> time_seconds(std::string_view request) {
    int32_t metric = match_metric(profile_, "time");
    if (metric < 0) missing(request, "a time metric");
    auto factor = seconds_per(unit_of(profile_.metrics[static_cast<size_t>(metric)].name));
    auto values = profile_.inclusive(metric);
    for (double& v : values)
      v *= factor.value_or(1e-9);  // Proton's default unit is ns
    return values;
  }

  Column percent(Column column, std::string_view base) {
    int32_t metric = match_metric(profile_, base);
    if (metric < 0) missing(column.header, "metric '" + std::string(base) + "'");
    const MetricInfo& info = profile_.metrics[static_cast<size_t>(metric)];
    if (info.name == "cycles") return cycles_percent(std::move(column), metric);
    column.values = profile_.inclusive(metric);
    double total = 0;
    if (info.kind == MetricKind::kInclusive) {
      total = column.values.empty() ? kAbsent : column.values[0];
      column.additive = true;
    } else {
      for (double v : column.values) {
        if (!is_absent(v)) total += v;
      }
    }
    for (double& v : column.values)
      v = v / total * 100.0;
    return column;
  }

  // Intra-kernel regions (docs/instrumentation.md): a region's cycles as a share of its
  // kernel's, the kernel being the nearest ancestor with no cycles of its own (100% there).
  Column cycles_percent(Column column, int32_t metric) {
    std::vector<double> own = profile_.stored(metric);
    std::vector<double> total = profile_.inclusive(metric);
    column.values.assign(profile_.nodes.size(), kAbsent);
    for (size_t i = 0; i < profile_.nodes.size(); ++i) {
      if (is_absent(own[i])) continue;
      int32_t k = profile_.nodes[i].parent;
      while (k >= 0 && !is_absent(own[static_cast<size_t>(k)]))
        k = profile_.nodes[k].parent;
      if (k < 0) continue;
      double base = total[static_cast<size_t>(k)];
      column.values[i] = base > 0 ? total[i] / base * 100.0 : kAbsent;
      column.values[static_cast<size_t>(k)] = 100.0;
    }
    column.additive = false;
    return column;
  }

  // flop[8|16|32|64]/s, gflop.../s, tflop.../s, byte/s, gbyte/s, tbyte/s.
  std::optional<Column> rate(Column& column, std::string_view request) {
    if (!request.ends_with("/s")) return std::nullopt;
    std::string_view stem = request.substr(0, request.size() - 2);
    double scale = 1;
    if (stem.starts_with("g") || stem.starts_with("t")) {
      scale = stem.front() == 'g' ? 1e9 : 1e12;
      stem.remove_prefix(1);
    }
    std::vector<int32_t> sources;
    if (stem == "byte") {
      sources.push_back(match_metric(profile_, "bytes"));
      if (sources[0] < 0) missing(request, "'bytes'");
    } else if (stem.starts_with("flop")) {
      std::string_view width = stem.substr(4);
      if (!width.empty() && width != "8" && width != "16" && width != "32" && width != "64") {
        return std::nullopt;
      }
      int32_t metric = match_metric(profile_, "flops" + std::string(width));
      if (metric >= 0) {
        sources.push_back(metric);
      } else if (width.empty()) {
        // No width-less "flops": sum what each width reported.
        for (int w : kFlopWidths) {
          int32_t m = match_metric(profile_, "flops" + std::to_string(w));
          if (m >= 0) sources.push_back(m);
        }
      }
      if (sources.empty()) missing(request, "'flops" + std::string(width) + "'");
    } else {
      return std::nullopt;
    }
    std::vector<double> amount(profile_.nodes.size(), kAbsent);
    for (int32_t m : sources) {
      auto values = profile_.inclusive(m);
      for (size_t i = 0; i < amount.size(); ++i) {
        if (is_absent(values[i])) continue;
        amount[i] = is_absent(amount[i]) ? values[i] : amount[i] + values[i];
      }
    }
    auto seconds = time_seconds(request);
    column.values.resize(amount.size());
    for (size_t i = 0; i < amount.size(); ++i) {
      column.values[i] = seconds[i] > 0 ? amount[i] / seconds[i] / scale : kAbsent;
    }
    return std::move(column);
  }

  // <metric>/<s|ms|us|ns> for any metric with a time unit, and avg_<metric>/<unit> per count.
  std::optional<Column> time_conversion(Column& column, std::string_view request) {
    auto slash = request.rfind('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto target = seconds_per(request.substr(slash + 1));
    if (!target) return std::nullopt;
    std::string_view base = request.substr(0, slash);
    bool average = base.starts_with("avg_");
    if (average) base.remove_prefix(4);
    int32_t metric = match_metric(profile_, base);
    if (metric < 0) missing(request, "metric '" + std::string(base) + "'");
    const MetricInfo& info = profile_.metrics[static_cast<size_t>(metric)];
    std::string unit = unit_of(info.name);
    // A unit-less "...time" is Proton's nanoseconds; any other unit-less metric is not a time.
    if (unit.empty() && std::string_view(to_lower(info.name)).ends_with("time")) unit = "ns";
    auto source = seconds_per(unit);
    if (!source) missing(request, "a time unit on '" + info.name + "'");
    double factor = *source / *target;
    column.values = profile_.inclusive(metric);
    for (double& v : column.values)
      v *= factor;
    column.unit = speedscope_unit(request.substr(slash + 1));
    if (average) {
      // A "<x>_time" counted by "<x>_calls" (cpu_timed_scope's cpu_time, the host calls'
      // sync_time and memcpy_time): time per call. Otherwise, as Triton's viewer does, per
      // kernel launch ("count").
      std::string calls;
      if (base.ends_with("_time")) calls = std::string(base.substr(0, base.size() - 5)) + "_calls";
      int32_t count = calls.empty() ? -1 : match_metric(profile_, calls);
      if (count < 0) count = match_metric(profile_, "count");
      if (count < 0) missing(request, calls.empty() ? "'count'" : "'" + calls + "' or 'count'");
      auto counts = profile_.inclusive(count);
      for (size_t i = 0; i < counts.size(); ++i) {
        column.values[i] = counts[i] > 0 ? column.values[i] / counts[i] : kAbsent;
      }
    } else {
      column.integral = info.integral && factor == 1;
      column.additive = info.kind == MetricKind::kInclusive;
    }
    return std::move(column);
  }

  // Achieved over peak: for each kernel the shortest time its FLOPs or bytes could take on its
  // device, summed over the subtree and divided by the subtree's measured time.
  Column util(Column column) {
    std::vector<std::pair<int, std::vector<double>>> flops;
    for (int w : kFlopWidths) {
      int32_t m = match_metric(profile_, "flops" + std::to_string(w));
      if (m >= 0) flops.emplace_back(w, profile_.stored(m));
    }
    int32_t bytes_metric = match_metric(profile_, "bytes");
    if (flops.empty() && bytes_metric < 0) missing("util", "'flops<width>' or 'bytes'");
    std::vector<double> bytes;
    if (bytes_metric >= 0) bytes = profile_.stored(bytes_metric);
    std::vector<double> min_time(profile_.nodes.size(), kAbsent);
    std::set<std::string> unknown;
    for (size_t i = 0; i < profile_.nodes.size(); ++i) {
      const Node& node = profile_.nodes[i];
      if (!node.is_kernel()) continue;
      const DeviceInfo* device =
          profile_.device(node.text_of("device_type"), node.text_of("device_id"));
      if (device == nullptr) {
        unknown.insert("device " + std::string(node.text_of("device_id")) +
                       " (not in the device map)");
        continue;
      }
      double flop_time = 0;
      bool any = false;
      bool known = true;
      for (const auto& [w, values] : flops) {
        if (is_absent(values[i])) continue;
        auto peak = peak_for(*device, w);
        if (!peak) {
          known = false;
          break;
        }
        flop_time += values[i] / peak->flops_per_s;
        any = true;
      }
      double byte_time = 0;
      if (known && !bytes.empty() && !is_absent(bytes[i])) {
        auto peak = peak_for(*device, 8);
        known = peak.has_value();
        if (known) byte_time = bytes[i] / peak->bytes_per_s;
        any = true;
      }
      if (!known) {
        unknown.insert(device->type + " arch '" + device->arch + "'");
        continue;
      }
      if (any) min_time[i] = std::max(flop_time, byte_time);
    }
    for (const auto& what : unknown) {
      warnings_.push_back("util: no peak figures for " + what + "; its kernels are left out");
    }
    min_time = roll_up(profile_, std::move(min_time));
    auto seconds = time_seconds("util");
    column.values.resize(min_time.size());
    for (size_t i = 0; i < min_time.size(); ++i) {
      column.values[i] = seconds[i] > 0 ? min_time[i] / seconds[i] : kAbsent;
    }
    return column;
  }

  const Profile& profile_;
  std::vector<std::string>& warnings_;
};

}  // namespace

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

int32_t match_metric(const Profile& profile, std::string_view request) {
  std::string wanted = to_lower(trim(request));
  for (size_t i = 0; i < profile.metrics.size(); ++i) {
    std::string name = to_lower(profile.metrics[i].name);
    std::string_view no_unit = trim(std::string_view(name).substr(0, name.find('(')));
    if (wanted == name || wanted == no_unit) return static_cast<int32_t>(i);
  }
  return -1;
}

std::optional<std::string> default_metric(const Profile& profile) {
  if (match_metric(profile, "time") >= 0) return "time/ms";
  if (!profile.metrics.empty()) return profile.metrics[0].name;
  return std::nullopt;
}

std::vector<Column> derive_columns(const Profile& profile, const std::vector<std::string>& requests,
                                   std::vector<std::string>& warnings) {
  Deriver deriver(profile, warnings);
  std::vector<Column> columns;
  for (const auto& request : requests) {
    if (to_lower(trim(request)) == "roofline") {  // roofline.h: several columns
      for (const auto& r : expand_roofline(profile))
        columns.push_back(deriver.derive(r));
      continue;
    }
    columns.push_back(deriver.derive(request));
  }
  return columns;
}

}  // namespace proton::viewer
