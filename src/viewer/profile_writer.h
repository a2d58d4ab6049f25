// Writes a Profile back as Hatchet JSON (`[root, device_map]`), the format both Proton and
// triton.profiler read, through the format library's one Hatchet writer
// (format/hatchet_emitter.h): the bytes are those the session writes for the same tree. Used for
// `proton-viewer merge` output, by the streaming rank merge (rank_merge_writer.cpp) and to check
// that what the reader read can be written and read back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "format/hatchet_emitter.h"
#include "format/json_writer.h"
#include "viewer/profile.h"

namespace proton::viewer {

std::string to_hatchet_json(const Profile& profile);

using HatchetJson = format::HatchetEmitter<JsonWriter>;

// The nodes of `shape`, depth first, calling `metrics(i)` inside node i to write its metrics
// (and on the root, its rules). A profile without nodes has the root {}.
void write_nodes(HatchetJson& e, const Profile& shape, const std::function<void(size_t)>& metrics);
// The device map, grouped by type in the order the types first appear.
void write_device_map(HatchetJson& e, const std::vector<DeviceInfo>& devices);

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees a
// half-written profile. Throws FileError on failure.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace proton::viewer
