#include "viewer/profile_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "viewer/hatchet_reader.h"

namespace proton::viewer {

void write_nodes(HatchetJson& e, const Profile& shape, const std::function<void(size_t)>& metrics) {
  if (shape.nodes.empty()) {
    e.empty_root();
    return;
  }
  format::write_tree(
      e, size_t{0}, [&](size_t i) -> const auto& { return shape.nodes[i].children; },
      [&](size_t i) {
        e.begin_node(shape.nodes[i].name, shape.nodes[i].type);
        metrics(i);
      });
}

void write_device_map(HatchetJson& e, const std::vector<DeviceInfo>& devices) {
  std::vector<std::string_view> types;
  for (const DeviceInfo& d : devices) {
    if (std::find(types.begin(), types.end(), d.type) == types.end()) types.push_back(d.type);
  }
  e.begin_devices();
  for (std::string_view type : types) {
    for (const DeviceInfo& d : devices) {
      if (d.type != type) continue;
      e.device(d);
    }
  }
  e.end_devices();
}

namespace {

// A kind the name does not say (a file's "metric_rules" declared it) is declared again, so the
// metric reads back as it was read.
void write_metric_rules(HatchetJson& e, const Profile& profile) {
  for (const MetricInfo& m : profile.metrics) {
    if (m.kind == metric_kind_of(m.name) || m.kind == MetricKind::kInclusive) continue;
    e.metric_rule(m.name, m.kind == MetricKind::kExclusive ? format::HatchetRule::kExclusive
                                                           : format::HatchetRule::kProperty);
  }
}

}  // namespace

std::string to_hatchet_json(const Profile& profile) {
  std::string out;
  JsonWriter w(out);
  HatchetJson e(w);
  e.begin_profile();
  write_nodes(e, profile, [&](size_t i) {
    const Node& node = profile.nodes[i];
    for (const auto& v : node.values) {
      const MetricInfo& info = profile.metrics[static_cast<size_t>(v.metric)];
      e.metric_number(info.name, v.value, info.integral);
    }
    for (const auto& [key, value] : node.text)
      e.metric(key, std::string_view(value));
    if (i == 0) write_metric_rules(e, profile);
  });
  write_device_map(e, profile.devices);
  e.end_profile();
  out.push_back('\n');
  return out;
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
