// Writing output files so that a reader never sees half a profile.
#pragma once

#include <string>
#include <string_view>

namespace proton {

/// Writes `data` to a temporary file beside `path` and renames it over `path`.
/// Throws std::runtime_error naming the path and the OS reason on failure; on failure the
/// previous content of `path`, if any, is untouched.
void write_file_atomically(const std::string& path, std::string_view data);

/// Empty when a file could be created at `path`; else a reason ("directory ... does not exist").
std::string check_writable(const std::string& path);

}  // namespace proton
