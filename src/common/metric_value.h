// One metric value: the type a launch carries (an op's metrics) and the call tree stores. Below
// both, so the launch path need not know the data layer.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace proton {

using MetricValue =
    std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

}  // namespace proton
