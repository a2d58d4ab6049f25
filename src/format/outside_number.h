// Converting numbers read from a file into integers. A double beyond the target type's range
// is undefined behaviour to convert, so every such number is range-checked first and refused
// with a message naming the field.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "format/input_error.h"

namespace proton::format {

// `value` of `field` as a whole number in [lo, hi]; otherwise InputError at `offset`. The bounds
// must lie within ±9e18 so that both they and the accepted values convert exactly to int64_t.
inline int64_t whole_number(double value, size_t offset, std::string_view field, int64_t lo,
                            int64_t hi) {
  if (!(value >= static_cast<double>(lo) && value <= static_cast<double>(hi)) ||
      std::trunc(value) != value) {
    char found[40];
    std::snprintf(found, sizeof found, "%.17g", value);
    throw InputError(offset, std::string(field) + " must be a whole number from " +
                                 std::to_string(lo) + " to " + std::to_string(hi) + ", found " +
                                 found);
  }
  return static_cast<int64_t>(value);
}

// The largest magnitude a device field (an architecture number) may have: exact in a double.
constexpr int64_t kMaxExactInteger = int64_t{1} << 53;

}  // namespace proton::format
