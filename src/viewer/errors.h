// The viewer's error for a request it cannot honour (unknown metric, bad regex, bad option).
// Input files that cannot be read raise InputError / FileError instead, so the command line can
// tell "you asked for something impossible" (exit 2) from "this file is broken" (exit 1).
#pragma once

#include <stdexcept>

namespace proton::viewer {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace proton::viewer
