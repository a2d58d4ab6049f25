#include "viewer/profile.h"

#include <algorithm>
#include <cmath>

namespace proton::viewer {

namespace {

bool ends_with_tag(std::string_view name, std::string_view tag) {
  while (!name.empty() && name.back() == ' ')
    name.remove_suffix(1);
  return name.size() >= tag.size() && name.substr(name.size() - tag.size()) == tag;
}

}  // namespace

MetricKind metric_kind_of(std::string_view name) {
  if (ends_with_tag(name, "(exc)")) return MetricKind::kExclusive;
  if (ends_with_tag(name, "(pty)")) return MetricKind::kProperty;
  return MetricKind::kInclusive;
}

PropertyFold property_fold(std::string_view name) {
  std::string_view base = name.substr(0, std::min(name.find(" ("), name.size()));
  if (base.ends_with("_min")) return PropertyFold::kMin;
  if (base.ends_with("_max")) return PropertyFold::kMax;
  return PropertyFold::kFirst;
}

bool folds_in(PropertyFold fold, double kept, double value) {
  return is_absent(kept) || (fold == PropertyFold::kMin && value < kept) ||
         (fold == PropertyFold::kMax && value > kept);
}

std::string_view Node::text_of(std::string_view key) const {
  for (const auto& [k, v] : text) {
    if (k == key) return v;
  }
  return {};
}

int32_t Profile::add_node(int32_t parent, std::string name, std::string type) {
  auto id = static_cast<int32_t>(nodes.size());
  Node& node = nodes.emplace_back();
  node.name = std::move(name);
  node.type = std::move(type);
  node.parent = parent;
  if (parent >= 0) nodes[static_cast<size_t>(parent)].children.push_back(id);
  return id;
}

int32_t Profile::metric_id(std::string_view name) {
  if (auto it = metric_ids_.find(name); it != metric_ids_.end()) return it->second;
  auto id = static_cast<int32_t>(metrics.size());
  auto declared = declared_kinds_.find(name);
  metrics.push_back(MetricInfo{std::string(name), declared != declared_kinds_.end()
                                                      ? declared->second
                                                      : metric_kind_of(name)});
  metric_ids_.emplace(std::string(name), id);
  return id;
}

void Profile::declare_kind(std::string_view name, MetricKind kind) {
  declared_kinds_.insert_or_assign(std::string(name), kind);
  if (int32_t id = find_metric(name); id >= 0) metrics[static_cast<size_t>(id)].kind = kind;
}

int32_t Profile::find_metric(std::string_view name) const {
  auto it = metric_ids_.find(name);
  return it == metric_ids_.end() ? -1 : it->second;
}

void Profile::add_value(int32_t node, int32_t metric, double value) {
  if (std::isnan(value)) value = std::numeric_limits<double>::quiet_NaN();  // never kAbsent
  auto& values = nodes[static_cast<size_t>(node)].values;
  for (auto& v : values) {
    if (v.metric == metric) {
      v.value += value;
      return;
    }
  }
  values.push_back({metric, value});
}

std::vector<double> Profile::stored(int32_t metric) const {
  std::vector<double> column(nodes.size(), kAbsent);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& v : nodes[i].values) {
      if (v.metric == metric) column[i] = v.value;
    }
  }
  return column;
}

std::vector<double> Profile::inclusive(int32_t metric) const {
  auto column = stored(metric);
  if (metrics[static_cast<size_t>(metric)].kind != MetricKind::kInclusive) return column;
  return roll_up(*this, std::move(column));
}

const DeviceInfo* Profile::device(std::string_view type, std::string_view id) const {
  for (const auto& d : devices) {
    if (d.id == id && (type.empty() || d.type == type)) return &d;
  }
  return nullptr;
}

std::vector<double> roll_up(const Profile& profile, std::vector<double> column) {
  for (size_t i = profile.nodes.size(); i-- > 1;) {
    if (is_absent(column[i])) continue;
    auto parent = static_cast<size_t>(profile.nodes[i].parent);
    column[parent] = is_absent(column[parent]) ? column[i] : column[parent] + column[i];
  }
  return column;
}

}  // namespace proton::viewer
