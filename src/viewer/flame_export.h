// Flame-graph exports of one metric column: folded stacks (Brendan Gregg's flamegraph.pl,
// inferno) and speedscope's JSON file format.
#pragma once

#include <string>
#include <vector>

#include "viewer/derived_metrics.h"
#include "viewer/frame_names.h"
#include "viewer/profile.h"

namespace proton::viewer {

// Each node's own share of an additive column: its value minus its shown children's, never
// negative. Frames hidden by `visible` (threshold, depth) fold into their shown ancestor.
std::vector<double> self_values(const Profile& profile, const Column& column,
                                const std::vector<char>& visible);

// "frame;frame;frame value" lines, root excluded, one per frame with a non-zero own value.
std::string to_folded(const Profile& profile, const Column& column,
                      const std::vector<char>& visible, const NameOptions& names);

// A speedscope "sampled" profile whose samples are the call paths weighted by own value.
std::string to_speedscope(const Profile& profile, const Column& column,
                          const std::vector<char>& visible, const NameOptions& names,
                          const std::string& title);

}  // namespace proton::viewer
