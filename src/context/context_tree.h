// The process-wide trie of calling paths.
//
// A ContextId names one path (scope, scope, state ...) from the root. Threads keep the id of
// their current path up to date as scopes open and close, so a kernel launch only reads one
// integer. Sessions map ContextIds onto nodes of their own call trees lazily, once per id.
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/chunked_array.h"
#include "common/ids.h"

namespace proton {

class ContextTree {
 public:
  struct Node {
    ContextId parent = kRootContext;
    NameId name = kNoName;
    uint32_t depth = 0;  // root = 0
  };

  static ContextTree& global();

  ContextTree();

  /// Finds or creates the child of `parent` named `name`. Takes a mutex: called on scope entry,
  /// not per launch.
  ContextId child(ContextId parent, NameId name);

  /// Lock-free: nodes never move once published.
  const Node& node(ContextId id) const { return nodes_[id]; }
  size_t size() const { return nodes_.size(); }

  /// Names from the outermost frame to `id` (root excluded).
  void path(ContextId id, std::vector<NameId>& out) const;

 private:
  static uint64_t key(ContextId parent, NameId name) { return (uint64_t{parent} << 32) | name; }
  std::mutex mu_;                                     // guards children_ and appends to nodes_
  std::unordered_map<uint64_t, ContextId> children_;  // (parent, name) -> child
  ChunkedArray<Node> nodes_;
};

}  // namespace proton
