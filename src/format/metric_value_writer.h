// One metric value in any of our structured writers (JsonWriter, MsgpackWriter): scalars as
// numbers, vectors as arrays. Shared so that a metric reads the same in a Hatchet tree and in a
// Chrome trace event's args (ints stay ints, floats stay floats). V is a std::variant of
// arithmetic scalars, std::string and vectors of scalars (the engine's MetricValue); taking it as
// a parameter keeps the format library free of the engine's headers.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

namespace proton {

template <typename W, typename V>
void write_metric_value(W& w, const V& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_arithmetic_v<T>) {
          w.value(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          w.value(std::string_view(x));
        } else {
          w.begin_array();
          for (auto e : x)
            w.value(e);
          w.end_array();
        }
      },
      v);
}

}  // namespace proton
