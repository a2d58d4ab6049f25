// The error of every reader of outside bytes (the JSON and msgpack cursors, the Hatchet reader,
// the trace header reader): the byte where reading stopped and why.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace proton::format {

// Bad input: `offset` is the byte where reading stopped, `what()` the reason.
class InputError : public std::runtime_error {
 public:
  InputError(size_t offset, const std::string& reason)
      : std::runtime_error(reason), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

}  // namespace proton::format
