// `proton-viewer merge`: many profiles of one program (one per rank, say) into one tree.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "viewer/profile.h"

namespace proton::viewer {

// Per node and metric the result holds:
//   <metric>                    the sum over inputs (stored exclusive, so tools roll it up);
//   <name>:mean|min|max [(unit)] (exc)  over the inputs' inclusive values, an input lacking the
//                               frame counting as 0; "(exc)" because a max of sums is not a sum
//                               of maxima, so readers must not roll these up again;
//   <name>:argmax (pty)         the index of the input holding the max.
// Properties "(pty)" keep the first input's value, extrema their extreme (property_fold). The input
// list is not stored in the file: Triton's viewer sums every metric column, so a string metric on
// the root would break it.
Profile merge_profiles(const std::vector<const Profile*>& inputs);

/// The column a merge writes for one statistic of a metric, for both merges (this one and the
/// streaming rank merge): "time (ns)" + "max" -> "time:max (ns) (exc)"; "util (exc)" + "max" ->
/// "util:max (exc)". The rank of the max ("argmax") and ratios ("imbalance") carry no unit.
std::string merge_stat_name(std::string_view metric, std::string_view stat, MetricKind kind);

}  // namespace proton::viewer
