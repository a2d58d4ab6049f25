#include "viewer/flame_export.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace proton::viewer {

namespace {

// flamegraph.pl reads a plain decimal count (no exponent) at the end of each line.
std::string plain_number(double value, bool integral) {
  char buffer[400];
  std::snprintf(buffer, sizeof buffer, integral ? "%.0f" : "%.6f", value);
  std::string out(buffer);
  if (!integral && out.find('.') != std::string::npos) {
    while (out.back() == '0')
      out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out;
}

}  // namespace

std::vector<double> self_values(const Profile& profile, const Column& column,
                                const std::vector<char>& visible) {
  size_t n = profile.nodes.size();
  std::vector<double> own(n, 0);
  for (size_t i = 0; i < n; ++i) {
    double v = column.values[i];
    own[i] = std::isfinite(v) ? v : 0;  // absent, NaN or infinite: nothing to draw
  }
  for (size_t i = 1; i < n; ++i) {
    if (!visible[i]) continue;
    auto parent = static_cast<size_t>(profile.nodes[i].parent);
    double v = column.values[i];
    if (std::isfinite(v)) own[parent] -= v;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!visible[i] || own[i] < 0) own[i] = 0;
  }
  return own;
}

std::string to_folded(const Profile& profile, const Column& column,
                      const std::vector<char>& visible, const NameOptions& names) {
  auto own = self_values(profile, column, visible);
  std::vector<std::string> path(profile.nodes.size());
  std::string out;
  for (size_t i = 1; i < profile.nodes.size(); ++i) {
    if (!visible[i]) continue;
    std::string name = display_name(profile.nodes[i].name, names);
    for (char& c : name) {
      if (c == ';') c = ':';  // ';' separates frames in the folded format
    }
    auto parent = static_cast<size_t>(profile.nodes[i].parent);
    path[i] = parent == 0 ? name : path[parent] + ";" + name;
    if (own[i] > 0) out += path[i] + " " + plain_number(own[i], column.integral) + "\n";
  }
  return out;
}

std::string to_speedscope(const Profile& profile, const Column& column,
                          const std::vector<char>& visible, const NameOptions& names,
                          const std::string& title) {
  using Json = nlohmann::ordered_json;
  auto own = self_values(profile, column, visible);
  Json frames = Json::array();
  std::unordered_map<std::string, size_t> frame_index;
  std::vector<size_t> frame_of(profile.nodes.size(), 0);
  std::vector<std::vector<size_t>> stack_of(profile.nodes.size());
  Json samples = Json::array();
  Json weights = Json::array();
  double total = 0;
  for (size_t i = 1; i < profile.nodes.size(); ++i) {
    if (!visible[i]) continue;
    std::string name = display_name(profile.nodes[i].name, names);
    auto [it, fresh] = frame_index.emplace(name, frame_index.size());
    if (fresh) frames.push_back({{"name", name}});
    auto parent = static_cast<size_t>(profile.nodes[i].parent);
    stack_of[i] = parent == 0 ? std::vector<size_t>{} : stack_of[parent];
    stack_of[i].push_back(it->second);
    if (own[i] > 0) {
      samples.push_back(stack_of[i]);
      weights.push_back(own[i]);
      total += own[i];
    }
  }
  Json profile_json = {{"type", "sampled"}, {"name", column.header}, {"unit", column.unit},
                       {"startValue", 0},   {"endValue", total},     {"samples", samples},
                       {"weights", weights}};
  Json document = {{"$schema", "https://www.speedscope.app/file-format-schema.json"},
                   {"shared", {{"frames", frames}}},
                   {"profiles", Json::array({profile_json})},
                   {"name", title},
                   {"activeProfileIndex", 0},
                   {"exporter", "proton-viewer"}};
  return document.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace proton::viewer
