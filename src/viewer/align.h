// Lines up several profiles by call path, for --diff-profile and merge.
#pragma once

#include <cstdint>
#include <vector>

#include "viewer/profile.h"

namespace proton::viewer {

struct Alignment {
  // The union tree: names, types and string metrics of the first input holding each path. Metric
  // values are left empty; callers fill what they need.
  Profile tree;
  // sources[n][k]: the node of input k at union node n's path, or -1 when input k lacks it.
  std::vector<std::vector<int32_t>> sources;
};

// Children are matched by name; the k-th same-named sibling of one input pairs with the k-th of
// another. Frames missing from some inputs are kept, in first-seen order.
Alignment align_profiles(const std::vector<const Profile*>& inputs);

}  // namespace proton::viewer
