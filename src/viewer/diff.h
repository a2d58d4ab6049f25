// --diff-profile: the main profile minus another, aligned by call path (as Triton's
// `gf.sub(other)`), keeping frames that only one side has.
#pragma once

#include <vector>

#include "viewer/derived_metrics.h"
#include "viewer/profile.h"
#include "viewer/text_render.h"

namespace proton::viewer {

struct DiffResult {
  Profile tree;
  std::vector<Column> columns;    // main - other; a side lacking the frame counts as zero
  std::vector<uint8_t> presence;  // Presence per node
};

// `main_columns` and `other_columns` hold the same requests derived on each profile.
DiffResult diff_profiles(const Profile& main, const std::vector<Column>& main_columns,
                         const Profile& other, const std::vector<Column>& other_columns);

}  // namespace proton::viewer
