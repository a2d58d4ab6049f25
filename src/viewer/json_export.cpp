#include "viewer/json_export.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <utility>

namespace proton::viewer {

std::string to_json_tree(const Profile& profile, const std::vector<Column>& columns,
                         const std::vector<char>& visible, const NameOptions& names) {
  using Json = nlohmann::ordered_json;
  Json header = Json::array();
  for (const auto& c : columns)
    header.push_back({{"name", c.header}, {"integral", c.integral}});
  Json nodes = Json::array();
  NameOptions full = names;
  full.full_names = true;
  // Pre-order with an explicit stack of (node, index of its parent in the output).
  std::vector<std::pair<int32_t, int64_t>> stack;
  if (!profile.nodes.empty()) stack.emplace_back(0, -1);
  while (!stack.empty()) {
    auto [node, parent] = stack.back();
    stack.pop_back();
    const Node& n = profile.nodes[static_cast<size_t>(node)];
    Json values = Json::array();
    for (const auto& c : columns) {
      double v = c.values[static_cast<size_t>(node)];
      if (is_absent(v)) {
        values.push_back(nullptr);
      } else if (std::isnan(v)) {  // JSON has no NaN or infinity: their names, as printed
        values.push_back("nan");
      } else if (std::isinf(v)) {
        values.push_back(v > 0 ? "inf" : "-inf");
      } else {
        values.push_back(v);
      }
    }
    auto index = static_cast<int64_t>(nodes.size());
    nodes.push_back({{"name", display_name(n.name, names)},
                     {"full_name", display_name(n.name, full)},
                     {"parent", parent},
                     {"values", std::move(values)}});
    for (auto it = n.children.rbegin(); it != n.children.rend(); ++it) {
      if (visible[static_cast<size_t>(*it)]) stack.emplace_back(*it, index);
    }
  }
  Json document = {{"columns", std::move(header)}, {"nodes", std::move(nodes)}};
  // Names come from files and may hold invalid UTF-8; replace rather than throw.
  return document.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace proton::viewer
