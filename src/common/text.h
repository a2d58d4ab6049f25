// Small text helpers shared by the viewer and the analyzer.
#pragma once

#include <string_view>

namespace proton {

/// `text` without leading and trailing spaces (metric names carry them around units).
inline std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

}  // namespace proton
