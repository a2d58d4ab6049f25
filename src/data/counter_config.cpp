#include "data/counter_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

namespace proton {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = std::min(s.find(sep, begin), s.size());
    out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

bool valid_metric_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '@' || c == '$';
  });
}

constexpr const char* kOptions =
    "metrics=a,b,c | interval_us=N | range=user|auto | replay | sampling=pm|range|both";

}  // namespace

bool is_counters_mode(std::string_view mode) {
  std::string head = lower(mode.substr(0, mode.find(':')));
  return head == "counters";
}

// Chosen to fit one pass on Hopper (GH100, checked with the profiler host API): the obvious
// sm__throughput.avg.pct_of_peak_sustained_elapsed needs 8 passes there and
// lts__t_sector_hit_rate.pct 2 (a hit and a miss count cannot share a pass), so SM throughput is
// the instruction-issue share and the L2 hit rate is estimated from L2 and DRAM sectors
// (viewer: l2_hit%). Both exact metrics remain available by name with ":replay".
std::vector<std::vector<std::string>> default_counter_metrics() {
  return {
      {"dram__bytes_read.sum"},
      {"dram__bytes_write.sum"},
      {"sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"sm__inst_executed.avg.pct_of_peak_sustained_active"},
      // On Hopper the hmma pipe counter also counts warpgroup MMAs (wgmma): ncu shows ~95% for
      // cuBLAS's bf16 GEMM there, while the gmma name is refused by the profiler host.
      {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
      {"lts__t_sectors.sum"},
  };
}

// PM sampling on GH100 (profiler host API, CUPTI 13.0): the three SM ratios of the Range
// Profiler's set need 2 passes together, and the hmma pipe has no PM counter under its usual
// name. The "TPC.TriageCompute." counters (the group NVIDIA's own PM-sampling sections use) give
// instructions issued and the hmma pipe in one pass with warps active, DRAM bytes, L2 sectors
// and the clock. "_active" ratios: not diluted by the idle part of a sample a kernel shares
// (data/counter_split.h). The second name of each row is the fallback for other chips; a row
// that would add a pass is left out and said at start.
std::vector<std::vector<std::string>> default_sampling_metrics() {
  return {
      {"dram__bytes_read.sum"},
      {"dram__bytes_write.sum"},
      // Not TPC.TriageCompute.tpc__warps_active_realtime: one pass too, but twice ncu's
      // sm__warps_active on an H100 GEMM (28.4% vs 14.8%).
      {"sm__warps_active.avg.pct_of_peak_sustained_active"},
      {"TPC.TriageCompute.sm__inst_executed_realtime.avg.pct_of_peak_sustained_active",
       "sm__inst_executed.avg.pct_of_peak_sustained_active"},
      {"TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_"
       "sustained_active",
       "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"},
      {"lts__t_sectors.sum"},
      {"gpc__cycles_elapsed.avg.per_second"},
  };
}

CounterConfig parse_counter_config(std::string_view mode) {
  CounterConfig c;
  if (!is_counters_mode(mode)) return c;
  c.enabled = true;
  bool range_given = false;
  std::string sampling;  // "" = not given
  std::vector<std::string_view> parts = split(mode, ':');
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view opt = parts[i];
    size_t eq = opt.find('=');
    std::string key = lower(opt.substr(0, eq));
    std::string_view value = eq == std::string_view::npos ? std::string_view{} : opt.substr(eq + 1);
    if (key == "metrics") {
      if (value.empty()) throw std::invalid_argument("counters: metrics= needs metric names");
      c.metrics.clear();
      for (std::string_view name : split(value, ',')) {
        if (!valid_metric_name(name)) {
          throw std::invalid_argument("counters: bad metric name '" + std::string(name) +
                                      "' (CUPTI names look like dram__bytes_read.sum)");
        }
        c.metrics.push_back({std::string(name)});
      }
      c.user_metrics = true;
    } else if (key == "range") {
      std::string v = lower(value);
      if (v == "user") {
        c.range = CounterRange::kUser;
      } else if (v == "auto") {
        c.range = CounterRange::kAuto;
      } else {
        throw std::invalid_argument("counters: unknown range '" + std::string(value) +
                                    "' (expected user or auto)");
      }
      range_given = true;
    } else if (key == "replay" && eq == std::string_view::npos) {
      c.replay = true;
    } else if (key == "interval_us") {
      uint32_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc{} || p != value.data() + value.size() || v == 0 || v > 1000000) {
        throw std::invalid_argument("counters: interval_us must be 1..1000000, not '" +
                                    std::string(value) + "'");
      }
      c.interval_us = v;
    } else if (key == "sampling") {
      sampling = lower(value);
      if (sampling != "range" && sampling != "pm" && sampling != "both") {
        throw std::invalid_argument("counters: unknown sampling '" + std::string(value) +
                                    "' (expected pm, range or both)");
      }
    } else {
      throw std::invalid_argument("counters: unknown option '" + std::string(opt) + "' (expected " +
                                  kOptions + ")");
    }
  }
  const bool wants_ranges = range_given || c.replay;
  if (sampling == "pm" && wants_ranges) {
    throw std::invalid_argument(
        "counters: range= and replay use the Range Profiler, which sampling=pm turns off "
        "(use sampling=both for both)");
  }
  if (sampling.empty()) sampling = wants_ranges ? "range" : "pm";
  c.range_profiler = sampling != "pm";
  c.pm_sampling = sampling != "range";
  if (!c.user_metrics) {
    c.metrics = c.range_profiler ? default_counter_metrics() : default_sampling_metrics();
  }
  return c;
}

std::string CounterConfig::canonical() const {
  if (!enabled) return "";
  std::string s = "counters";
  if (user_metrics) {
    s += ":metrics=";
    for (size_t i = 0; i < metrics.size(); ++i) {
      if (i) s += ',';
      s += metrics[i].front();
    }
  }
  if (range_profiler) s += range == CounterRange::kAuto ? ":range=auto" : ":range=user";
  if (replay) s += ":replay";
  s += range_profiler && pm_sampling ? ":sampling=both"
       : range_profiler              ? ":sampling=range"
                                     : ":sampling=pm";
  if (pm_sampling) s += ":interval_us=" + std::to_string(interval_us);
  return s;
}

}  // namespace proton
