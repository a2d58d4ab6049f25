#include "analysis/rank_stats.h"

#include "common/text.h"

namespace proton::analysis {

std::string rank_stat_metric(std::string_view metric, std::string_view stat) {
  std::string_view core = trim(metric);
  auto open = core.find('(');
  std::string out = std::string(trim(core.substr(0, open))) + ":" + std::string(stat);
  // A unit travels with values in that unit; argmax (a rank) and imbalance (a ratio) have none.
  if (open != std::string_view::npos && stat != "argmax" && stat != "imbalance")
    out += " " + std::string(core.substr(open));
  out += stat == "argmax" ? " (pty)" : " (exc)";
  return out;
}

}  // namespace proton::analysis
