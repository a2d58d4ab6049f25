#include "io/counter_track_writer.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "data/counter_rules.h"

namespace proton {

namespace {

std::string ts_us(uint64_t ns, int64_t offset, uint64_t base) {
  int64_t steady = static_cast<int64_t>(ns) - offset;
  double us = static_cast<double>(steady - static_cast<int64_t>(base)) / 1000.0;
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.3f", us);
  return buf;
}

// Non-finite values as JsonWriter writes every metric: NaN as null (a viewer skips it rather than
// drawing a made-up 0), +-inf as +-1e999.
std::string number(double v) {
  if (std::isnan(v)) return "null";
  if (std::isinf(v)) return v > 0 ? "1e999" : "-1e999";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<std::string> counter_track_events(const CounterTrack& track, int64_t gpu_offset_ns,
                                              uint64_t base_steady_ns) {
  std::vector<std::string> out;
  // A ".sum" metric counts per sample; its track shows the rate (per second), which does not
  // depend on the sampling period.
  std::vector<std::string> names;
  std::vector<bool> rate;
  for (const std::string& n : track.names()) {
    rate.push_back(counter_rule(n) == CounterRule::kSum);
    names.push_back(rate.back() ? n + ".per_second" : n);
  }
  std::map<uint32_t, uint64_t> last_end;  // device -> end of its previous sample
  for (const CounterTrack::Sample& s : track.samples()) {
    auto prev = last_end.find(s.device);
    // A gap of more than one sample's length: close the tracks at the previous end.
    if (prev != last_end.end() && s.start_ns > prev->second &&
        s.start_ns - prev->second > (s.end_ns - s.start_ns) + 1000) {
      for (const std::string& name : names) {
        out.push_back("{\"ph\":\"C\",\"pid\":" + std::to_string(s.device) + ",\"name\":\"" +
                      escaped(name) +
                      "\",\"ts\":" + ts_us(prev->second, gpu_offset_ns, base_steady_ns) +
                      ",\"args\":{\"value\":0}}");
      }
    }
    last_end[s.device] = s.end_ns;
    const double seconds = static_cast<double>(s.end_ns - s.start_ns) * 1e-9;
    for (size_t m = 0; m < names.size() && m < s.values.size(); ++m) {
      double v = rate[m] ? (seconds > 0 ? s.values[m] / seconds : 0.0) : s.values[m];
      out.push_back("{\"ph\":\"C\",\"pid\":" + std::to_string(s.device) + ",\"name\":\"" +
                    escaped(names[m]) +
                    "\",\"ts\":" + ts_us(s.start_ns, gpu_offset_ns, base_steady_ns) +
                    ",\"args\":{\"value\":" + number(v) + "}}");
    }
  }
  return out;
}

}  // namespace proton
