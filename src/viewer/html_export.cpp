#include "viewer/html_export.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "viewer/errors.h"
#include "viewer/source_view.h"

namespace proton::viewer {

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string to_html(const Profile& profile, const Column& column, const std::vector<char>& visible,
                    const NameOptions& names, const std::string& title) {
  using Json = nlohmann::json;
  // Children have larger indices than parents: build subtrees bottom-up.
  std::vector<Json> built(profile.nodes.size());
  for (size_t i = profile.nodes.size(); i-- > 0;) {
    if (!visible[i]) continue;
    const Node& node = profile.nodes[i];
    double v = column.values[i];
    Json json = {{"n", display_name(node.name, names)}, {"v", std::isfinite(v) ? v : 0.0}};
    if (node.is_kernel()) json["k"] = 1;
    Json children = Json::array();
    for (int32_t child : node.children) {
      if (visible[static_cast<size_t>(child)]) {
        children.push_back(std::move(built[static_cast<size_t>(child)]));
      }
    }
    if (!children.empty()) json["c"] = std::move(children);
    built[i] = std::move(json);
  }
  Json data = {{"metric", column.header}, {"title", title}, {"tree", std::move(built[0])}};
  // PC sampling: clicking a kernel shows its annotated source (source_view.h), as --source.
  Json sources = Json::object();
  try {
    for (const KernelSource& k : collect_source(profile, "")) {
      sources[display_name(k.kernel, names)] = render_source({k}, true);
    }
  } catch (const UsageError&) {
    // no kernel has samples: no source panel
  }
  if (!sources.empty()) data["sources"] = std::move(sources);
  std::string text = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  // "</script>" inside a name must not end the data element; "<\/" is the same JSON string.
  std::string safe;
  safe.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += text[i];
    }
  }
  return html_page(html_escape(title), safe);
}

}  // namespace proton::viewer
