#include "viewer/diff.h"

#include <cmath>

#include "viewer/align.h"

namespace proton::viewer {

DiffResult diff_profiles(const Profile& main, const std::vector<Column>& main_columns,
                         const Profile& other, const std::vector<Column>& other_columns) {
  Alignment aligned = align_profiles({&main, &other});
  DiffResult result;
  result.tree = std::move(aligned.tree);
  size_t nodes = result.tree.nodes.size();
  result.presence.resize(nodes);
  for (size_t i = 0; i < nodes; ++i) {
    bool in_main = aligned.sources[i][0] >= 0;
    bool in_other = aligned.sources[i][1] >= 0;
    result.presence[i] = in_main && in_other ? kBoth : (in_main ? kOnlyMain : kOnlyOther);
  }
  for (size_t c = 0; c < main_columns.size(); ++c) {
    Column column;
    column.header = main_columns[c].header;
    column.integral = main_columns[c].integral && other_columns[c].integral;
    column.unit = main_columns[c].unit;
    column.values.resize(nodes);
    for (size_t i = 0; i < nodes; ++i) {
      int32_t a = aligned.sources[i][0];
      int32_t b = aligned.sources[i][1];
      double x = a >= 0 ? main_columns[c].values[static_cast<size_t>(a)] : kAbsent;
      double y = b >= 0 ? other_columns[c].values[static_cast<size_t>(b)] : kAbsent;
      if (is_absent(x) && is_absent(y)) {
        column.values[i] = kAbsent;
      } else {
        column.values[i] = (is_absent(x) ? 0 : x) - (is_absent(y) ? 0 : y);
      }
    }
    result.columns.push_back(std::move(column));
  }
  return result;
}

}  // namespace proton::viewer
