// The proton-viewer command line, as a function so tests can run it without a process.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace proton::viewer {

struct Terminal {
  bool stdout_is_tty = false;
  bool no_color_env = false;  // NO_COLOR is set (https://no-color.org)
};

// Runs `proton-viewer <args...>` (args exclude the program name). Returns the exit status:
// 0 success, 1 an input file could not be read, 2 a bad request (option, metric, regex).
// Never throws.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            const Terminal& terminal = {});

}  // namespace proton::viewer
