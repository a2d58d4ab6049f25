#include "viewer/profile_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "viewer/hatchet_reader.h"

namespace proton::viewer {

namespace {

using Json = nlohmann::ordered_json;

// nlohmann::json writes every non-finite number as null. Infinities keep their sign as +-1e999,
// as in Proton's other writers: they go into the document as these strings and are replaced in
// the text after dump (if a name in the profile holds one, the document is written again with
// null for them instead).
constexpr std::string_view kPosInf = R"("\u0001proton:+inf\u0001")";
constexpr std::string_view kNegInf = R"("\u0001proton:-inf\u0001")";

// `infinities` counts the markers written; without it, infinities are plain doubles (null).
Json number(double value, bool integral, size_t* infinities) {
  if (std::isinf(value) && infinities != nullptr) {
    ++*infinities;
    return value > 0 ? "\x01proton:+inf\x01" : "\x01proton:-inf\x01";
  }
  if (integral && std::fabs(value) < 9.0e18) return static_cast<int64_t>(value);
  return value;
}

size_t count(const std::string& text, std::string_view what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// False when the text holds more markers than were written (a name holds one).
bool restore_infinities(std::string& text, size_t infinities) {
  if (infinities == 0) return true;
  if (count(text, kPosInf) + count(text, kNegInf) != infinities) return false;
  for (auto [marker, number] : {std::pair{kPosInf, std::string_view("1e999")},
                                std::pair{kNegInf, std::string_view("-1e999")}}) {
    for (size_t at = text.find(marker); at != std::string::npos;
         at = text.find(marker, at + number.size()))
      text.replace(at, marker.size(), number);
  }
  return true;
}

Json device_map(const Profile& profile) {
  Json map = Json::object();
  for (const DeviceInfo& d : profile.devices) {
    Json device = Json::object();
    device["arch"] = d.arch;
    // Device fields are finite: the reader refuses others.
    device["num_sms"] = number(d.num_sms, true, nullptr);
    device["clock_rate"] = number(d.clock_rate_khz, true, nullptr);
    device["memory_clock_rate"] = number(d.memory_clock_rate_khz, true, nullptr);
    device["bus_width"] = number(d.bus_width_bits, true, nullptr);
    map[d.type][d.id] = std::move(device);
  }
  return map;
}

}  // namespace

namespace {

std::string hatchet_text(const Profile& profile, size_t* infinities) {
  // Children have larger indices than parents, so a reverse sweep builds each subtree before
  // its parent needs it.
  std::vector<Json> built(profile.nodes.size());
  for (size_t i = profile.nodes.size(); i-- > 0;) {
    const Node& node = profile.nodes[i];
    Json json = Json::object();
    json["frame"] = {{"name", node.name}, {"type", node.type.empty() ? "function" : node.type}};
    Json metrics = Json::object();
    for (const auto& v : node.values) {
      const MetricInfo& info = profile.metrics[static_cast<size_t>(v.metric)];
      metrics[info.name] = number(v.value, info.integral, infinities);
    }
    for (const auto& [key, value] : node.text)
      metrics[key] = value;
    json["metrics"] = std::move(metrics);
    Json children = Json::array();
    for (int32_t child : node.children)
      children.push_back(std::move(built[static_cast<size_t>(child)]));
    json["children"] = std::move(children);
    built[i] = std::move(json);
  }
  Json document = Json::array();
  document.push_back(profile.nodes.empty() ? Json::object() : std::move(built[0]));
  document.push_back(device_map(profile));
  // Names come from files and may hold invalid UTF-8; replace rather than throw.
  return document.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace

std::string to_hatchet_json(const Profile& profile) {
  size_t infinities = 0;
  std::string text = hatchet_text(profile, &infinities);
  if (restore_infinities(text, infinities)) return text;
  return hatchet_text(profile, nullptr);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    // Errors name the path asked for; the temporary file beside it is an implementation detail.
    if (!out) throw FileError(path + ": cannot create: " + std::strerror(errno));
    out << text;
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw FileError(path + ": cannot write: " + std::strerror(errno));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temp.c_str());
    throw FileError(path + ": cannot replace: " + std::strerror(error));
  }
}

}  // namespace proton::viewer
