#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "backends/pc_sampling_options.h"

namespace proton {

namespace {

constexpr std::string_view kMode = "pcsampling";

uint64_t parse_uint(std::string_view key, std::string_view value, uint64_t lo, uint64_t hi) {
  std::string s(value);
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || s[0] == '-' || v < lo || v > hi) {
    throw std::invalid_argument("mode 'pcsampling': " + std::string(key) + "='" + s +
                                "' is not a whole number from " + std::to_string(lo) + " to " +
                                std::to_string(hi));
  }
  return v;
}

}  // namespace

uint32_t pc_period_log2_for_interval(uint64_t interval) {
  uint32_t log2 = 5;
  while (log2 < 31 && (uint64_t{1} << log2) < interval)
    ++log2;
  return log2;
}

PcSamplingOptions parse_pc_sampling_mode(const std::string& mode) {
  PcSamplingOptions o;
  std::string_view m(mode);
  if (m.substr(0, kMode.size()) != kMode || (m.size() > kMode.size() && m[kMode.size()] != ':')) {
    return o;
  }
  o.enabled = true;
  m.remove_prefix(kMode.size());
  while (!m.empty()) {
    m.remove_prefix(1);  // ':'
    size_t end = m.find(':');
    std::string_view item = m.substr(0, end);
    m = end == std::string_view::npos ? std::string_view() : m.substr(end);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      throw std::invalid_argument("mode 'pcsampling': option '" + std::string(item) +
                                  "' needs a value (e.g. pcsampling:interval=65536)");
    }
    std::string_view key = item.substr(0, eq);
    std::string_view value = item.substr(eq + 1);
    if (key == "interval") {
      o.period_log2 = pc_period_log2_for_interval(parse_uint(key, value, 1, uint64_t{1} << 31));
    } else if (key == "buffer_mb") {
      o.buffer_bytes = parse_uint(key, value, 1, 4096) << 20;
    } else if (key == "sleep_ms") {
      o.sleep_span_ms = static_cast<uint32_t>(parse_uint(key, value, 1, 10'000));
    } else if (key == "drain_ms") {
      o.drain_ms = static_cast<uint32_t>(parse_uint(key, value, 1, 10'000));
    } else if (key == "adapt") {
      o.adapt = parse_uint(key, value, 0, 1) == 1;
    } else {
      throw std::invalid_argument("mode 'pcsampling': unknown option '" + std::string(key) +
                                  "' (expected interval, buffer_mb, sleep_ms, drain_ms, adapt)");
    }
  }
  return o;
}

}  // namespace proton
