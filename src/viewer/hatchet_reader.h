// Reads Hatchet profiles (JSON or msgpack, as written by Proton and by triton.profiler) into a
// Profile, through the format library's one reader (format/hatchet_reader.h); and the file
// handling every profile reader of the viewer shares.
#pragma once

#include <string>
#include <string_view>

#include "format/hatchet_reader.h"
#include "viewer/errors.h"
#include "viewer/profile.h"

namespace proton::viewer {

using format::kMaxTreeDepth;

// Parses `text`, Hatchet JSON or msgpack; throws InputError (byte offset + reason) on anything
// it cannot read.
Profile parse_hatchet(std::string_view text);

// What `text` is when it is plainly not a profile (empty, compressed, a Chrome trace, binary
// data), as a phrase with a hint; empty when it may be one and the parser should say.
std::string not_a_profile(std::string_view text);

// Reads and parses a file. Throws FileError whose what() is "path:offset: reason".
Profile load_hatchet(const std::string& path);

// Parses `text`, read from `path`, with `parse` (a Hatchet or a rank-file parser): what is
// plainly not a profile, and every parse error, become a FileError naming the path (and the
// byte offset where the parser stopped).
template <class Parse>
auto parse_file_text(const std::string& path, std::string_view text, Parse&& parse) {
  std::string what = not_a_profile(text);
  if (!what.empty()) throw FileError(path + ": " + what);
  try {
    return parse(text);
  } catch (const InputError& e) {
    throw FileError(path + ":" + std::to_string(e.offset()) + ": " + e.what());
  }
}

// Reads a whole regular file into memory; throws FileError naming the path on failure and for
// anything that is not a regular file (a directory, a FIFO, a device), which is never opened
// for reading (a FIFO would block).
std::string read_file(const std::string& path);
// The same into `text` (replacing its contents, reusing its capacity).
void read_file_into(const std::string& path, std::string& text);

}  // namespace proton::viewer
