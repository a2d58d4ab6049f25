// Reads Hatchet JSON as written by Proton and by triton.profiler: `[root, device_map]`.
#pragma once

#include <string>
#include <string_view>

#include "viewer/json_cursor.h"
#include "viewer/profile.h"

namespace proton::viewer {

// A tree deeper than this is refused: real call paths are a few hundred frames at most, and the
// bound keeps the recursive reader's stack use small whatever the input.
constexpr int kMaxTreeDepth = 1000;

// Parses `text`; throws InputError (byte offset + reason) on anything it cannot read.
Profile parse_hatchet(std::string_view text);

// Reads and parses a file. Throws FileError whose what() is "path:offset: reason".
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
Profile load_hatchet(const std::string& path);

// Reads a whole file into memory; throws FileError naming the path on failure.
std::string read_file(const std::string& path);
// The same into `text` (replacing its contents, reusing its capacity).
void read_file_into(const std::string& path, std::string& text);

}  // namespace proton::viewer
