#include "viewer/tree_filter.h"

#include <cmath>
#include <string>
#include <string_view>
#include <unordered_map>

#include "viewer/errors.h"

namespace proton::viewer {

namespace {

enum class Action : uint8_t { kKeep, kDrop, kSplice };

// Copies `source` into a new profile, applying one action per node. Spliced nodes vanish and
// their children attach to the nearest kept ancestor; a child that lands next to a same-named
// sibling is merged into it so the tree stays keyed by call path.
class Rebuilder {
 public:
  explicit Rebuilder(Profile&& source) : source_(std::move(source)) {
    out_.devices = std::move(source_.devices);
    out_.run = std::move(source_.run);  // a filtered rank's file is still that rank's
    // Same ids in the copy: node values move over verbatim.
    for (const auto& m : source_.metrics) {
      out_.metrics[static_cast<size_t>(out_.metric_id(m.name))] = m;
    }
    out_.nodes.reserve(source_.nodes.size());
  }

  Profile run(const std::vector<Action>& actions) {
    bool splices = false;
    for (Action a : actions)
      splices |= a == Action::kSplice;
    // Explicit stack of (source node, output parent) so depth never touches the C++ stack.
    std::vector<std::pair<int32_t, int32_t>> stack{{0, -1}};
    while (!stack.empty()) {
      auto [src, parent] = stack.back();
      stack.pop_back();
      auto action = actions[static_cast<size_t>(src)];
      if (src == 0) action = Action::kKeep;
      if (action == Action::kDrop) continue;
      int32_t target = parent;
      if (action == Action::kKeep)
        target = splices ? place_merging(src, parent) : place(src, parent);
      const auto& children = source_.nodes[static_cast<size_t>(src)].children;
      for (auto it = children.rbegin(); it != children.rend(); ++it)
        stack.emplace_back(*it, target);
    }
    return std::move(out_);
  }

 private:
  // Only drops happen: siblings stay unique, so nodes move over without lookups.
  int32_t place(int32_t src, int32_t parent) {
    Node& node = source_.nodes[static_cast<size_t>(src)];
    int32_t id = out_.add_node(parent, std::move(node.name), std::move(node.type));
    Node& copy = out_.nodes[static_cast<size_t>(id)];
    copy.values = std::move(node.values);
    copy.text = std::move(node.text);
    return id;
  }

  int32_t place_merging(int32_t src, int32_t parent) {
    Node& node = source_.nodes[static_cast<size_t>(src)];
    if (parent >= 0) {
      // Keys view names in source_, which outlives the map and is never modified by merging.
      auto [it, fresh] = by_path_.try_emplace(Key{parent, node.name}, 0);
      if (!fresh) {
        int32_t id = it->second;
        Node& existing = out_.nodes[static_cast<size_t>(id)];
        for (const auto& v : node.values)
          out_.add_value(id, v.metric, v.value);
        for (const auto& t : node.text) {
          if (existing.text_of(t.first).empty()) existing.text.push_back(t);
        }
        return id;
      }
      it->second = static_cast<int32_t>(out_.nodes.size());
    }
    int32_t id = out_.add_node(parent, node.name, node.type);
    Node& copy = out_.nodes[static_cast<size_t>(id)];
    copy.values = node.values;
    copy.text = node.text;
    return id;
  }

  struct Key {
    int32_t parent;
    std::string_view name;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<std::string_view>()(k.name) * 31 + static_cast<size_t>(k.parent);
    }
  };

  Profile source_;
  Profile out_;
  std::unordered_map<Key, int32_t, KeyHash> by_path_;
};

}  // namespace

bool is_metadata_frame(std::string_view name) {
  return name.starts_with(kMetadataScopeName) &&
         (name.size() == kMetadataScopeName.size() || name[kMetadataScopeName.size()] == ':');
}

Profile hide_metadata(Profile profile) {
  // Only metadata frames go (with their subtrees). A frame with no metric of its own anywhere
  // below is a scope that ran no kernel (a CPU-only `with proton.scope("load")`): it stays, as
  // a row with empty cells, because the profile says that scope was entered.
  size_t n = profile.nodes.size();
  std::vector<Action> actions(n);
  for (size_t i = 0; i < n; ++i)
    actions[i] = is_metadata_frame(profile.nodes[i].name) ? Action::kDrop : Action::kKeep;
  return Rebuilder(std::move(profile)).run(actions);
}

Profile include_paths(Profile profile, const NamePattern& pattern) {
  size_t n = profile.nodes.size();
  std::vector<char> matched(n), above(n), below(n);
  for (size_t i = 0; i < n; ++i) {
    const Node& node = profile.nodes[i];
    matched[i] = pattern.matches(node.name);
    above[i] = matched[i] || (node.parent >= 0 && above[static_cast<size_t>(node.parent)]);
  }
  for (size_t i = n; i-- > 0;) {
    below[i] = below[i] || matched[i];
    int32_t parent = profile.nodes[i].parent;
    if (below[i] && parent >= 0) below[static_cast<size_t>(parent)] = 1;
  }
  std::vector<Action> actions(n);
  for (size_t i = 0; i < n; ++i)
    actions[i] = above[i] || below[i] ? Action::kKeep : Action::kDrop;
  return Rebuilder(std::move(profile)).run(actions);
}

Profile exclude_frames(Profile profile, const NamePattern& pattern) {
  std::vector<Action> actions(profile.nodes.size());
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    actions[i] = pattern.matches(profile.nodes[i].name) ? Action::kSplice : Action::kKeep;
  }
  return Rebuilder(std::move(profile)).run(actions);
}

std::vector<char> threshold_mask(const Profile& profile, const Column& column, double threshold,
                                 bool magnitude) {
  size_t n = profile.nodes.size();
  std::vector<char> keep(n, 0);
  for (size_t i = n; i-- > 0;) {
    double v = magnitude ? std::fabs(column.values[i]) : column.values[i];
    keep[i] = keep[i] || v >= threshold;  // NaN never passes
    int32_t parent = profile.nodes[i].parent;
    if (keep[i] && parent >= 0) keep[static_cast<size_t>(parent)] = 1;
  }
  if (n > 0) keep[0] = 1;
  return keep;
}

}  // namespace proton::viewer
