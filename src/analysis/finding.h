// One answer of the analyzer: where, what was seen (with its numbers), the time at stake and
// what to try.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace proton::analysis {

enum class Severity : uint8_t { kHigh, kMedium, kLow };

/// "high", "medium", "low".
const char* severity_name(Severity s);

struct Finding {
  std::string rule;  // a stable id: "launch_bound", "roofline.memory_bound", "hint.pcsampling"
  Severity severity = Severity::kLow;
  int32_t node = 0;                // in the ProfileView the rule read
  std::vector<std::string> frame;  // names from below the root to the node
  // The numbers (and the few words) the rule used, in the order it used them.
  std::vector<std::pair<std::string, std::variant<double, std::string>>> evidence;
  std::string seen;                 // what was seen, in a sentence with its numbers
  std::string why;                  // why it matters
  std::string suggestion;           // what to try
  std::optional<double> saving_ns;  // estimated time to win; none where no estimate is honest

  Finding& number(std::string key, double v) {
    evidence.emplace_back(std::move(key), v);
    return *this;
  }
  Finding& word(std::string key, std::string v) {
    evidence.emplace_back(std::move(key), std::move(v));
    return *this;
  }
  // The number under `key`, or NaN.
  double number_of(std::string_view key) const;
};

}  // namespace proton::analysis
