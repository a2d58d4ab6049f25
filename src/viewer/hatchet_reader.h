// Reads Hatchet JSON as written by Proton and by triton.profiler: `[root, device_map]`.
#pragma once

#include <string>
#include <string_view>

#include "format/json_cursor.h"
#include "format/msgpack_cursor.h"
#include "viewer/profile.h"

namespace proton::viewer {

// A tree deeper than this is refused: real call paths are a few hundred frames at most, and the
// bound keeps the recursive reader's stack use small whatever the input.
constexpr int kMaxTreeDepth = 1000;

// Calls parse(tag, body) with tag's ::type the cursor `text` needs: MsgpackCursor for a
// `.hatchet_msgpack` document, JsonCursor otherwise. A leading UTF-8 byte-order mark is skipped
// (as editors on some systems write one); error offsets still count from the start of `text`.
template <class Cursor>
struct CursorTag {
  using type = Cursor;
};
template <class Parse>
auto parse_either(std::string_view text, Parse&& parse) {
  constexpr std::string_view kBom = "\xef\xbb\xbf";
  size_t skip = text.starts_with(kBom) ? kBom.size() : 0;
  std::string_view body = text.substr(skip);
  try {
    if (looks_like_msgpack(body)) return parse(CursorTag<MsgpackCursor>{}, body);
    return parse(CursorTag<JsonCursor>{}, body);
  } catch (const InputError& e) {
    if (skip == 0) throw;
    throw InputError(e.offset() + skip, e.what());
  }
}

// Parses `text`, Hatchet JSON or msgpack; throws InputError (byte offset + reason) on anything
// it cannot read.
Profile parse_hatchet(std::string_view text);

// What `text` is when it is plainly not a profile (empty, compressed, a Chrome trace, binary
// data), as a phrase with a hint; empty when it may be one and the parser should say.
std::string not_a_profile(std::string_view text);

// Reads and parses a file. Throws FileError whose what() is "path:offset: reason".
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
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
