// The viewer's errors. UsageError: a request it cannot honour (unknown metric, bad regex, bad
// option). Input files that cannot be read raise InputError (the readers' error: byte offset and
// reason) or FileError (the same naming the file) instead, so the command line can tell "you
// asked for something impossible" (exit 2) from "this file is broken" (exit 1).
#pragma once

#include <stdexcept>

#include "format/input_error.h"

namespace proton::viewer {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using format::InputError;

// A file that cannot be read or parsed; what() is "path: reason" or "path:offset: reason".
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace proton::viewer
