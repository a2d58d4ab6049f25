#include "analysis/finding.h"

#include <limits>

namespace proton::analysis {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kHigh:
      return "high";
    case Severity::kMedium:
      return "medium";
    case Severity::kLow:
      break;
  }
  return "low";
}

double Finding::number_of(std::string_view key) const {
  for (const auto& [k, v] : evidence) {
    if (k == key && std::holds_alternative<double>(v)) return std::get<double>(v);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace proton::analysis
