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
                    const NameOptions& names, const std::string& title,
                    const std::vector<analysis::Finding>& findings) {
  using Json = nlohmann::json;
  // The analyzer's findings (docs/advise.md) beside the graph. Each links to its frame, or to
  // the nearest shown frame above it, by the index marked "a" on that frame's node.
  std::vector<char> anchored(profile.nodes.size(), 0);
  Json found = Json::array();
  for (const analysis::Finding& f : findings) {
    // A node out of range (findings of another profile) links to the root.
    auto at = f.node > 0 && static_cast<size_t>(f.node) < profile.nodes.size()
                  ? static_cast<size_t>(f.node)
                  : 0;
    while (at > 0 && !visible[at])
      at = static_cast<size_t>(profile.nodes[at].parent);
    anchored[at] = 1;
    found.push_back({{"rule", f.rule},
                     {"severity", analysis::severity_name(f.severity)},
                     {"frame", f.frame},
                     {"suggestion", f.suggestion},
                     {"saving_ns", f.saving_ns ? Json(*f.saving_ns) : Json()},
                     {"at", at}});
  }
  // Children have larger indices than parents: build subtrees bottom-up.
  std::vector<Json> built(profile.nodes.size());
  for (size_t i = profile.nodes.size(); i-- > 0;) {
    if (!visible[i]) continue;
    const Node& node = profile.nodes[i];
    double v = column.values[i];
    Json json = {{"n", display_name(node.name, names)}, {"v", std::isfinite(v) ? v : 0.0}};
    if (node.is_kernel()) json["k"] = 1;
    if (anchored[i]) json["a"] = i;
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
  if (!found.empty()) data["findings"] = std::move(found);
  std::string text = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  // No '<' at all in the data element: "</script>" in a name must not end it, nor "<!--<script>"
  // keep the real end tag from ending it. "\u003c" is the same JSON string.
  std::string safe;
  safe.reserve(text.size());
  for (char c : text) {
    if (c == '<') {
      safe += "\\u003c";
    } else {
      safe += c;
    }
  }
  return html_page(html_escape(title), safe);
}

}  // namespace proton::viewer
