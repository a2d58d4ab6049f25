// Helpers shared by the core tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "attribution/launch_stage.h"
#include "common/name_table.h"
#include "context/context_tree.h"
#include "context/thread_context.h"

namespace proton::testing {

inline NameId id(std::string_view s) {
  return NameTable::global().intern(s);
}

/// The names on the path of `ctx`, joined with '/'.
inline std::string path_of(ContextId ctx) {
  std::vector<NameId> names;
  ContextTree::global().path(ctx, names);
  std::string out;
  for (NameId n : names) {
    if (!out.empty()) out += '/';
    out += NameTable::global().name(n);
  }
  return out;
}

/// Every launch tag staged so far, in order (empties the stages).
inline std::vector<LaunchTag> drain_tags() {
  std::vector<LaunchTag> out;
  LaunchStage::drain([&](const LaunchTag& t) { out.push_back(t); });
  return out;
}

/// Makes the calling thread the main thread with no scopes, for the test's duration.
struct MainThreadFixture {
  MainThreadFixture() {
    ThreadContext::set_main_thread();
    ThreadContext::current().reset();
  }
  ~MainThreadFixture() { ThreadContext::current().reset(); }
};

}  // namespace proton::testing
