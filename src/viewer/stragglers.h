// `proton-viewer --stragglers`: the frames of a multi-rank merge where the slowest rank is
// furthest above the others, and which ranks those are.
#pragma once

#include <ostream>
#include <string>

#include "viewer/frame_names.h"
#include "viewer/profile.h"
#include "viewer/rank_merge.h"

namespace proton::viewer {

struct StragglerOptions {
  std::string metric;       // a raw metric request ("time", "cpu_time"); matched as -m does
  size_t top = 10;          // frames listed
  double min_share = 0.01;  // frames below this share of the root's sum are noise, skipped
  NameOptions names;
};

// Per frame: imbalance = max / mean over the ranks that have it, the rank of the max, the
// ranks lacking the frame (listed as missing, never folded in as zeros). Then the ranks that
// are slowest most often among those frames. `merged` is `merger.result()`.
void render_stragglers(std::ostream& out, const RankMerger& merger, const Profile& merged,
                       const StragglerOptions& options);

}  // namespace proton::viewer
