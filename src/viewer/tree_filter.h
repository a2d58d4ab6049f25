// Tree surgery behind -i, -e, -t and the hiding of launch-hook metadata frames.
#pragma once

#include <string_view>
#include <vector>

#include "viewer/derived_metrics.h"
#include "viewer/name_pattern.h"
#include "viewer/profile.h"

namespace proton::viewer {

// Triton's launch hook runs the kernel's launch_metadata function inside a scope of this name
// (triton.profiler.hooks.launch.COMPUTE_METADATA_SCOPE_NAME); kernels launched there are hook
// overhead, not the user's work.
inline constexpr std::string_view kMetadataScopeName = "__proton_launch_metadata";

bool is_metadata_frame(std::string_view name);

// Drops metadata frames with their subtrees; frames without metrics (empty scopes) stay.
Profile hide_metadata(Profile profile);

// Keeps the nodes on paths through a frame whose name matches `pattern`:
// the matches, their ancestors and their descendants.
Profile include_paths(Profile profile, const NamePattern& pattern);

// Removes frames whose name matches `pattern`; their children move up to the nearest kept
// ancestor, merging with a same-named sibling there. The root is never removed.
Profile exclude_frames(Profile profile, const NamePattern& pattern);

// Nodes to show under -t: those whose value reaches `threshold` (by magnitude when `magnitude`,
// for diffs), and their ancestors. The root is always shown.
std::vector<char> threshold_mask(const Profile& profile, const Column& column, double threshold,
                                 bool magnitude);

}  // namespace proton::viewer
