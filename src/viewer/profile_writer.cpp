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

Json number(double value, bool integral) {
  if (integral && std::fabs(value) < 9.0e18) return static_cast<int64_t>(value);
  return value;
}

Json device_map(const Profile& profile) {
  Json map = Json::object();
  for (const DeviceInfo& d : profile.devices) {
    Json device = Json::object();
    device["arch"] = d.arch;
    device["num_sms"] = number(d.num_sms, true);
    device["clock_rate"] = number(d.clock_rate_khz, true);
    device["memory_clock_rate"] = number(d.memory_clock_rate_khz, true);
    device["bus_width"] = number(d.bus_width_bits, true);
    map[d.type][d.id] = std::move(device);
  }
  return map;
}

}  // namespace

std::string to_hatchet_json(const Profile& profile) {
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
      metrics[info.name] = number(v.value, info.integral);
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
