// Names of the per-rank statistics a multi-rank merge writes beside each summed metric:
// "time (ns)" -> "time:max (ns) (exc)", "time:mean (ns) (exc)", "time:argmax (pty)",
// "time:imbalance (exc)". Shared by the merge's readers (the straggler view, the analyzer).
#pragma once

#include <string>
#include <string_view>

namespace proton::analysis {

/// The metric holding statistic `stat` ("mean", "min", "max", "argmax", "imbalance") of the
/// summed metric `metric` in a merged profile.
std::string rank_stat_metric(std::string_view metric, std::string_view stat);

}  // namespace proton::analysis
