// The fuzzers' check of the Hatchet writer: what the reader accepted is written and read back
// with nothing lost that the reader keeps (names, string metrics, every stored value and the
// metric kinds), whatever bytes the names hold. Traps otherwise.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

#include "viewer/hatchet_reader.h"
#include "viewer/profile_writer.h"

namespace proton::viewer {

inline void check_round_trip(const Profile& profile) {
  Profile again = parse_hatchet(to_hatchet_json(profile));
  if (again.nodes.size() != profile.nodes.size()) __builtin_trap();
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    if (again.nodes[i].name != profile.nodes[i].name) __builtin_trap();
    if (again.nodes[i].text != profile.nodes[i].text) __builtin_trap();
  }
  for (size_t m = 0; m < profile.metrics.size(); ++m) {
    std::vector<double> before = profile.stored(static_cast<int32_t>(m));
    int32_t id = again.find_metric(profile.metrics[m].name);
    std::vector<double> after =
        id >= 0 ? again.stored(id) : std::vector<double>(before.size(), kAbsent);
    if (id >= 0 && again.metrics[static_cast<size_t>(id)].kind != profile.metrics[m].kind) {
      __builtin_trap();
    }
    for (size_t i = 0; i < before.size(); ++i) {
      // The same number (an integer -0 is written 0), NaN for NaN, absent for absent.
      double x = before[i], y = after[i];
      if (is_absent(x) != is_absent(y)) __builtin_trap();
      if (!is_absent(x) && x != y && !(std::isnan(x) && std::isnan(y))) __builtin_trap();
    }
  }
}

}  // namespace proton::viewer
