// The one grammar of mode strings (options/mode.h). Nothing else parses a mode.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <iterator>
#include <span>
#include <stdexcept>

#include "options/mode.h"

namespace proton {

namespace {

using Strings = std::span<const std::string_view>;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  while (true) {
    size_t end = s.find(sep, begin);
    out.push_back(s.substr(begin, end == std::string_view::npos ? s.npos : end - begin));
    if (end == std::string_view::npos) return out;
    begin = end + sep.size();
  }
}

std::string join(Strings items) {
  std::string out;
  for (std::string_view i : items)
    out += (out.empty() ? "" : ", ") + std::string(i);
  return out;
}

// A whole number in [lo, hi], or an error naming the mode and the key.
uint64_t whole(std::string_view mode, std::string_view key, std::string_view value, uint64_t lo,
               uint64_t hi) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc{} || p != value.data() + value.size() || v < lo || v > hi) {
    throw std::invalid_argument("mode '" + std::string(mode) + "': " + std::string(key) + "='" +
                                std::string(value) + "' is not a whole number from " +
                                std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

// One ':'-separated option: key, value and whether '=' was there.
struct Option {
  std::string key;
  std::string_view value;
  bool has_value;
};

Option option(std::string_view item) {
  size_t eq = item.find('=');
  if (eq == std::string_view::npos) return {lower(trim(item)), {}, false};
  return {lower(trim(item.substr(0, eq))), trim(item.substr(eq + 1)), true};
}

PeriodicFlushing periodic_flushing(const std::vector<std::string_view>& parts) {
  PeriodicFlushing p{true, "hatchet"};
  for (size_t i = 1; i < parts.size(); ++i) {
    Option o = option(parts[i]);
    if (o.key != "format" || !o.has_value) {
      throw std::invalid_argument(
          "unknown periodic_flushing option '" + std::string(parts[i]) +
          "' (expected 'format=hatchet', 'format=hatchet_msgpack' or 'format=chrome_trace')");
    }
    p.format = std::string(o.value);
  }
  if (p.format != "hatchet" && p.format != "hatchet_msgpack" && p.format != "chrome_trace") {
    throw std::invalid_argument("unknown periodic_flushing format '" + p.format +
                                "' (expected 'hatchet', 'hatchet_msgpack' or 'chrome_trace')");
  }
  return p;
}

PcSamplingOptions pc_sampling(const std::vector<std::string_view>& parts) {
  PcSamplingOptions o;
  o.enabled = true;
  for (size_t i = 1; i < parts.size(); ++i) {
    Option opt = option(parts[i]);
    if (!opt.has_value) {
      throw std::invalid_argument("mode 'pcsampling': option '" + std::string(parts[i]) +
                                  "' needs a value (e.g. pcsampling:interval=65536)");
    }
    std::string_view v = opt.value;
    if (opt.key == "interval") {
      o.interval = whole("pcsampling", opt.key, v, 1, uint64_t{1} << 31);
      o.period_log2 = pc_period_log2_for_interval(o.interval);
    } else if (opt.key == "buffer_mb") {
      o.buffer_bytes = whole("pcsampling", opt.key, v, 1, 4096) << 20;
    } else if (opt.key == "sleep_ms") {
      o.sleep_span_ms = static_cast<uint32_t>(whole("pcsampling", opt.key, v, 1, 10'000));
    } else if (opt.key == "drain_ms") {
      o.drain_ms = static_cast<uint32_t>(whole("pcsampling", opt.key, v, 1, 10'000));
    } else if (opt.key == "adapt") {
      o.adapt = whole("pcsampling", opt.key, v, 0, 1) == 1;
    } else {
      throw std::invalid_argument("mode 'pcsampling': unknown option '" + opt.key +
                                  "' (expected interval, buffer_mb, sleep_ms, drain_ms, adapt)");
    }
  }
  return o;
}

bool valid_metric_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '.' || c == '@' || c == '$';
  });
}

CounterConfig counters(const std::vector<std::string_view>& parts) {
  CounterConfig c;
  c.enabled = true;
  bool range_given = false;
  std::string sampling;  // "" = not given
  for (size_t i = 1; i < parts.size(); ++i) {
    Option o = option(parts[i]);
    if (o.key == "metrics") {
      if (o.value.empty()) throw std::invalid_argument("counters: metrics= needs metric names");
      c.metrics.clear();
      for (std::string_view name : split(o.value, ",")) {
        if (!valid_metric_name(name)) {
          throw std::invalid_argument("counters: bad metric name '" + std::string(name) +
                                      "' (CUPTI names look like dram__bytes_read.sum)");
        }
        c.metrics.push_back({std::string(name)});
      }
      c.user_metrics = true;
    } else if (o.key == "range") {
      std::string v = lower(o.value);
      if (v != "user" && v != "auto") {
        throw std::invalid_argument("counters: unknown range '" + std::string(o.value) +
                                    "' (expected user or auto)");
      }
      c.range = v == "auto" ? CounterRange::kAuto : CounterRange::kUser;
      range_given = true;
    } else if (o.key == "replay" && !o.has_value) {
      c.replay = true;
    } else if (o.key == "interval_us") {
      c.interval_us = static_cast<uint32_t>(whole("counters", o.key, o.value, 1, 1'000'000));
    } else if (o.key == "sampling") {
      sampling = lower(o.value);
      if (sampling != "range" && sampling != "pm" && sampling != "both") {
        throw std::invalid_argument("counters: unknown sampling '" + std::string(o.value) +
                                    "' (expected pm, range or both)");
      }
    } else {
      throw std::invalid_argument(
          "counters: unknown option '" + std::string(parts[i]) +
          "' (expected metrics=a,b,c | interval_us=N | range=user|auto | replay | "
          "sampling=pm|range|both)");
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

// Instrumentation ----------------------------------------------------------------------------

constexpr std::string_view kInstrModes[] = {"default", "mma"};
constexpr std::string_view kInstrKeys[] = {"metric_type", "sampling_strategy", "sampling_options",
                                           "granularity", "buffer_strategy",   "buffer_type",
                                           "buffer_size", "optimizations"};
constexpr std::string_view kMetricTypes[] = {"cycle"};
constexpr std::string_view kGranularities[] = {"cta",          "warp",         "warp_2",
                                               "warp_4",       "warp_8",       "warp_group",
                                               "warp_group_2", "warp_group_4", "warp_group_8"};
constexpr std::string_view kBufferStrategies[] = {"circular", "flush"};
constexpr std::string_view kBufferTypes[] = {"shared", "global"};
constexpr std::string_view kSamplingStrategies[] = {"none", "selective"};
constexpr std::string_view kOptimizations[] = {"time_shift", "sched_stores", "sched_barriers",
                                               "clock32"};

std::string valid_parts() {
  return "modes: default, mma, pcsampling, counters, graph, periodic_flushing; options: " +
         join(kInstrKeys) + "; granularity: " + join(kGranularities) +
         "; buffer_strategy: " + join(kBufferStrategies) + "; buffer_type: " + join(kBufferTypes) +
         "; sampling_strategy: " + join(kSamplingStrategies) +
         "; optimizations: " + join(kOptimizations);
}

// A value of one of Triton's enums: "warp", or as Triton prints it, "GRANULARITY.WARP".
std::string choice(std::string_view what, std::string_view value, Strings allowed) {
  std::string v = lower(trim(value));
  if (size_t dot = v.find('.'); dot != std::string::npos) v = v.substr(dot + 1);
  for (std::string_view a : allowed) {
    if (a == v) return v;
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(value) +
                              "' (valid: " + join(allowed) + ")");
}

std::vector<uint32_t> warp_ids(std::string_view text) {
  std::vector<uint32_t> out;
  for (std::string_view part : split(text, ",")) {
    part = trim(part);
    if (part.empty()) continue;
    uint32_t w = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), w);
    if (ec != std::errc{} || p != part.data() + part.size()) {
      throw std::invalid_argument("sampling_options must be warp ids like '0,4', not '" +
                                  std::string(text) + "'");
    }
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void set_instr_option(InstrumentationMode& m, std::string_view key, std::string_view value,
                      std::string_view text) {
  if (key == "metric_type") {
    m.metric_type = choice("metric_type", value, kMetricTypes);
  } else if (key == "sampling_strategy") {
    m.sampling_strategy = choice("sampling_strategy", value, kSamplingStrategies);
  } else if (key == "sampling_options") {
    m.sampled_warps = warp_ids(value);
  } else if (key == "granularity") {
    m.granularity = choice("granularity", value, kGranularities);
  } else if (key == "buffer_strategy") {
    m.buffer_strategy = choice("buffer_strategy", value, kBufferStrategies);
  } else if (key == "buffer_type") {
    m.buffer_type = choice("buffer_type", value, kBufferTypes);
  } else if (key == "buffer_size") {
    uint64_t size = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
    if (!value.empty() && (ec != std::errc{} || p != value.data() + value.size())) {
      throw std::invalid_argument("buffer_size must be an integer in '" + std::string(text) + "'");
    }
    if ((size & (size - 1)) != 0) {
      throw std::invalid_argument("buffer_size must be 0 (default) or a power of two, not " +
                                  std::to_string(size));
    }
    m.buffer_size = size;
  } else if (key == "optimizations") {
    std::vector<std::string> names;
    for (std::string_view item : split(value, ",")) {
      item = trim(item);
      if (!item.empty()) names.push_back(choice("optimization", item, kOptimizations));
    }
    m.optimizations = std::move(names);
  } else {
    throw std::invalid_argument("unknown option '" + std::string(key) + "' in mode '" +
                                std::string(text) + "' (" + valid_parts() + ")");
  }
}

void check_instrumentation(const InstrumentationMode& m) {
  if (m.sampling_strategy == "selective" && m.sampled_warps.empty()) {
    throw std::invalid_argument("sampling_strategy=selective needs sampling_options, e.g. '0,4'");
  }
}

// "<mode>_<metric>::[<granularity>::<strategy>::<warps|all>]", the paper's short form.
InstrumentationMode instrumentation_short(std::string_view text) {
  size_t sep = text.find("::");
  std::string_view head = trim(text.substr(0, sep));
  std::string_view rest = trim(text.substr(sep + 2));
  if (rest.size() < 2 || rest.front() != '[' || rest.back() != ']') {
    throw std::invalid_argument("malformed mode '" + std::string(text) +
                                "': expected '<mode>_cycle::[<granularity>::<strategy>::"
                                "<warps|all>]' (" +
                                valid_parts() + ")");
  }
  size_t underscore = head.find('_');
  InstrumentationMode m;
  m.name = lower(head.substr(0, underscore));
  if (std::find(std::begin(kInstrModes), std::end(kInstrModes), m.name) == std::end(kInstrModes)) {
    throw std::invalid_argument("unknown mode '" + m.name + "' in '" + std::string(text) + "' (" +
                                valid_parts() + ")");
  }
  std::string_view metric =
      underscore == std::string_view::npos ? std::string_view{} : head.substr(underscore + 1);
  if (!metric.empty()) m.metric_type = choice("metric_type", metric, kMetricTypes);
  std::vector<std::string_view> parts = split(rest.substr(1, rest.size() - 2), "::");
  std::string_view granularity = parts.size() > 0 ? trim(parts[0]) : std::string_view{};
  if (!granularity.empty()) {
    m.granularity = choice("granularity", granularity == "warpgroup" ? "warp_group" : granularity,
                           kGranularities);
  }
  if (parts.size() > 1 && !trim(parts[1]).empty()) {
    m.buffer_strategy = choice("buffer_strategy", parts[1], kBufferStrategies);
  }
  if (parts.size() > 2 && !trim(parts[2]).empty() && trim(parts[2]) != "all") {
    std::string warps(trim(parts[2]));
    std::replace(warps.begin(), warps.end(), ';', ',');
    m.sampling_strategy = "selective";
    m.sampled_warps = warp_ids(warps);
  }
  check_instrumentation(m);
  return m;
}

InstrumentationMode instrumentation(std::string_view text,
                                    const std::vector<std::string_view>& parts) {
  InstrumentationMode m;
  m.name = lower(trim(parts[0]));
  for (size_t i = 1; i < parts.size(); ++i) {
    Option o = option(parts[i]);
    if (!o.has_value) {
      throw std::invalid_argument("malformed option '" + std::string(parts[i]) + "' in mode '" +
                                  std::string(text) + "': expected key=value (" + valid_parts() +
                                  ")");
    }
    set_instr_option(m, o.key, o.value, text);
  }
  check_instrumentation(m);
  return m;
}

}  // namespace

std::vector<std::string> optimizations_or_default(const InstrumentationMode& mode) {
  // The cheapest options that stay correct (python/proton/mode.py's DEFAULT_OPTIMIZATIONS).
  return mode.optimizations.value_or(std::vector<std::string>{"clock32", "sched_stores"});
}

uint32_t pc_period_log2_for_interval(uint64_t interval) {
  uint32_t log2 = 5;
  while (log2 < 31 && (uint64_t{1} << log2) < interval)
    ++log2;
  return log2;
}

Mode parse_mode(std::string_view text) {
  text = trim(text);
  if (text.empty()) return KernelTimingMode{};
  if (text.find("::") != std::string_view::npos) return instrumentation_short(text);
  std::vector<std::string_view> parts = split(text, ":");
  std::string head = lower(trim(parts[0]));
  if (head == "graph" && parts.size() == 1) return GraphMode{};
  if (head == "periodic_flushing") return periodic_flushing(parts);
  if (head == "pcsampling") return pc_sampling(parts);
  if (head == "counters") return counters(parts);
  if (head == "default" || head == "mma") return instrumentation(text, parts);
  if (head == "graph") {
    throw std::invalid_argument("mode 'graph' takes no options, not '" + std::string(text) + "'");
  }
  throw std::invalid_argument("unknown mode '" + std::string(text) + "' (" + valid_parts() + ")");
}

std::string_view mode_kind(const Mode& mode) {
  constexpr std::string_view kKinds[] = {"kernel_timing", "graph",    "periodic_flushing",
                                         "pcsampling",    "counters", "instrumentation"};
  return kKinds[mode.index()];
}

}  // namespace proton
