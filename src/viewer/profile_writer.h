// Writes a Profile back as Hatchet JSON (`[root, device_map]`), the format both Proton and
// triton.profiler read; used for `proton-viewer merge` output.
#pragma once

#include <string>

#include "viewer/profile.h"

namespace proton::viewer {

std::string to_hatchet_json(const Profile& profile);

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees a
// half-written profile. Throws FileError on failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace proton::viewer
