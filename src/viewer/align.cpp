#include "viewer/align.h"

#include <string>
#include <unordered_map>

namespace proton::viewer {

Alignment align_profiles(const std::vector<const Profile*>& inputs) {
  Alignment result;
  size_t n = inputs.size();
  struct Item {
    std::vector<int32_t> sources;
    int32_t parent;
  };
  std::vector<Item> stack;
  std::vector<int32_t> roots(n, -1);
  for (size_t k = 0; k < n; ++k) {
    if (!inputs[k]->nodes.empty()) roots[k] = 0;
  }
  stack.push_back({roots, -1});
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    const Node* first = nullptr;
    for (size_t k = 0; k < n && first == nullptr; ++k) {
      if (item.sources[k] >= 0) first = &inputs[k]->nodes[static_cast<size_t>(item.sources[k])];
    }
    if (first == nullptr) continue;
    int32_t id = result.tree.add_node(item.parent, first->name, first->type);
    for (size_t k = 0; k < n; ++k) {
      if (item.sources[k] < 0) continue;
      Node& out = result.tree.nodes[static_cast<size_t>(id)];
      for (const auto& t : inputs[k]->nodes[static_cast<size_t>(item.sources[k])].text) {
        if (out.text_of(t.first).empty()) out.text.push_back(t);
      }
    }
    result.sources.push_back(item.sources);

    // Group the inputs' children by (name, occurrence among same-named siblings).
    std::vector<std::vector<int32_t>> groups;
    std::unordered_map<std::string, size_t> group_of;
    for (size_t k = 0; k < n; ++k) {
      if (item.sources[k] < 0) continue;
      std::unordered_map<std::string_view, int> seen;
      for (int32_t child : inputs[k]->nodes[static_cast<size_t>(item.sources[k])].children) {
        const std::string& name = inputs[k]->nodes[static_cast<size_t>(child)].name;
        std::string key = name + '\x1f' + std::to_string(seen[name]++);
        auto [it, fresh] = group_of.emplace(std::move(key), groups.size());
        if (fresh) groups.emplace_back(n, -1);
        groups[it->second][k] = child;
      }
    }
    for (size_t g = groups.size(); g-- > 0;)
      stack.push_back({std::move(groups[g]), id});
  }
  return result;
}

}  // namespace proton::viewer
