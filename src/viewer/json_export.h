// The shown tree as JSON, for scripts and for checking other readers against the viewer: every
// frame the tree view would print, its short and full names, and every requested column.
#pragma once

#include <string>
#include <vector>

#include "viewer/derived_metrics.h"
#include "viewer/frame_names.h"
#include "viewer/profile.h"

namespace proton::viewer {

// {"columns": [{"name", "integral"}...], "nodes": [{"name", "full_name", "parent", "values"}...]}
// Nodes come in pre-order (the tree view's order); "parent" is an index into "nodes" (-1 for
// the root); an absent or undefined value is null, an infinite one "inf" or "-inf". `visible`
// is the -t/-d mask.
std::string to_json_tree(const Profile& profile, const std::vector<Column>& columns,
                         const std::vector<char>& visible, const NameOptions& names);

}  // namespace proton::viewer
