// Helpers shared by the viewer tests: fixture paths and running the CLI in-process.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "viewer/cli.h"
#include "viewer/hatchet_reader.h"

namespace proton::viewer::testing {

inline std::string fixture(const std::string& name) {
  return std::string(PROTON_VIEWER_FIXTURES) + "/" + name;
}

struct CliResult {
  int status;
  std::string out;
  std::string err;
};

inline CliResult run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int status = run_cli(args, out, err);
  return {status, out.str(), err.str()};
}

// Index of the first node named `name`, or -1.
inline int32_t find_node(const Profile& p, const std::string& name) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (p.nodes[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

}  // namespace proton::viewer::testing
