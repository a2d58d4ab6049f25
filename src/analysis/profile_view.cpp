#include "analysis/profile_view.h"

#include <cmath>

namespace proton::analysis {

int32_t ProfileView::add_node(int32_t parent, std::string name) {
  auto id = static_cast<int32_t>(nodes.size());
  ViewNode n;
  n.name = std::move(name);
  n.parent = parent;
  nodes.push_back(std::move(n));
  if (parent >= 0) nodes[static_cast<size_t>(parent)].children.push_back(id);
  return id;
}

int32_t ProfileView::add_kernel(int32_t parent, std::string name, std::string device_id,
                                std::string device_type) {
  int32_t id = add_node(parent, std::move(name));
  nodes[static_cast<size_t>(id)].device_id = std::move(device_id);
  nodes[static_cast<size_t>(id)].device_type = std::move(device_type);
  return id;
}

int32_t ProfileView::metric_id(std::string_view name) {
  int32_t id = find_metric(name);
  if (id >= 0) return id;
  metrics.emplace_back(name);
  return static_cast<int32_t>(metrics.size() - 1);
}

void ProfileView::set(int32_t node, std::string_view metric, double value) {
  int32_t m = metric_id(metric);
  auto& values = nodes[static_cast<size_t>(node)].values;
  for (auto& [id, v] : values) {
    if (id == m) {
      v = value;
      return;
    }
  }
  values.emplace_back(m, value);
}

void ProfileView::set_text(int32_t node, std::string_view key, std::string text) {
  auto& texts = nodes[static_cast<size_t>(node)].texts;
  for (auto& [k, v] : texts) {
    if (k == key) {
      v = std::move(text);
      return;
    }
  }
  texts.emplace_back(std::string(key), std::move(text));
}

std::string_view ProfileView::text(int32_t node, std::string_view key) const {
  if (node < 0 || static_cast<size_t>(node) >= nodes.size()) return {};
  for (const auto& [k, v] : nodes[static_cast<size_t>(node)].texts) {
    if (k == key) return v;
  }
  return {};
}

int32_t ProfileView::find_metric(std::string_view name) const {
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i] == name) return static_cast<int32_t>(i);
  }
  return -1;
}

double ProfileView::value(int32_t node, int32_t metric) const {
  if (metric < 0 || node < 0 || static_cast<size_t>(node) >= nodes.size()) return kNoValue;
  for (const auto& [id, v] : nodes[static_cast<size_t>(node)].values) {
    if (id == metric) return v;
  }
  return kNoValue;
}

std::vector<double> ProfileView::stored(int32_t metric) const {
  std::vector<double> out(nodes.size(), kNoValue);
  for (size_t i = 0; i < nodes.size(); ++i)
    out[i] = value(static_cast<int32_t>(i), metric);
  return out;
}

namespace {

std::vector<double> roll_up(const ProfileView& view, std::vector<double> column) {
  for (size_t i = view.nodes.size(); i-- > 1;) {
    double v = column[i];
    if (std::isnan(v)) continue;
    double& up = column[static_cast<size_t>(view.nodes[i].parent)];
    up = std::isnan(up) ? v : up + v;
  }
  return column;
}

}  // namespace

std::vector<double> ProfileView::kernel_sum(int32_t metric) const {
  std::vector<double> column(nodes.size(), kNoValue);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_kernel()) column[i] = value(static_cast<int32_t>(i), metric);
  }
  return roll_up(*this, std::move(column));
}

std::vector<double> ProfileView::subtree_sum(int32_t metric) const {
  return roll_up(*this, stored(metric));
}

const ViewDevice* ProfileView::device(std::string_view type, std::string_view id) const {
  for (const ViewDevice& d : devices) {
    if (d.id == id && (type.empty() || d.type.empty() || d.type == type)) return &d;
  }
  return nullptr;
}

std::vector<std::string> ProfileView::path(int32_t node) const {
  std::vector<std::string> out;
  for (int32_t i = node; i > 0; i = nodes[static_cast<size_t>(i)].parent)
    out.push_back(nodes[static_cast<size_t>(i)].name);
  return {out.rbegin(), out.rend()};
}

}  // namespace proton::analysis
