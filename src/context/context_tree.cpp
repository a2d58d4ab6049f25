#include "context/context_tree.h"

#include <algorithm>

namespace proton {

ContextTree& ContextTree::global() {
  static ContextTree* tree = new ContextTree();  // leaked: outlives CUPTI's worker thread
  return *tree;
}

ContextTree::ContextTree() {
  nodes_.push_back(Node{});
}

ContextId ContextTree::child(ContextId parent, NameId name) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = children_.try_emplace(key(parent, name), 0);
  if (inserted) {
    it->second =
        static_cast<ContextId>(nodes_.push_back(Node{parent, name, nodes_[parent].depth + 1}));
  }
  return it->second;
}

void ContextTree::path(ContextId id, std::vector<NameId>& out) const {
  size_t first = out.size();
  while (id != kRootContext) {
    const Node& n = node(id);
    out.push_back(n.name);
    id = n.parent;
  }
  std::reverse(out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
}

}  // namespace proton
