#include "data/metric.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace proton {

namespace {

bool ends_with_tag(std::string_view name, std::string_view tag) {
  return name.size() >= tag.size() && name.substr(name.size() - tag.size()) == tag;
}

// Int sums wrap around at 64 bits (two's complement, as triton.profiler's uint64 sums do) rather
// than overflow, which is undefined behaviour for signed integers.
int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

template <typename T>
void add_vectors(std::vector<T>& into, const std::vector<T>& from) {
  if (from.size() > into.size()) into.resize(from.size(), T{});
  for (size_t i = 0; i < from.size(); ++i) {
    if constexpr (std::is_same_v<T, int64_t>) {
      into[i] = wrapping_add(into[i], from[i]);
    } else {
      into[i] += from[i];
    }
  }
}

}  // namespace

const char* metric_type_name(MetricType t) {
  switch (t) {
    case MetricType::kInt:
      return "int";
    case MetricType::kFloat:
      return "float";
    case MetricType::kIntVector:
      return "list[int]";
    case MetricType::kFloatVector:
      return "list[float]";
    case MetricType::kString:
      return "str";
  }
  return "?";
}

MetricRule metric_rule(std::string_view name) {
  if (ends_with_tag(name, "(exc)")) return MetricRule::kExclusive;
  if (ends_with_tag(name, "(pty)")) return MetricRule::kProperty;
  return MetricRule::kSum;
}

std::string_view metric_output_name(std::string_view name) {
  for (std::string_view tag : {std::string_view("(exc)"), std::string_view("(pty)")}) {
    if (ends_with_tag(name, tag)) {
      name.remove_suffix(tag.size());
      while (!name.empty() && name.back() == ' ')
        name.remove_suffix(1);
      return name;
    }
  }
  return name;
}

MetricValue coerce_metric(std::string_view name, MetricValue value) {
  if (name.starts_with("flops")) {
    if (auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
    if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
      return std::vector<double>(v->begin(), v->end());
    }
  } else if (name == "bytes") {
    if (auto* d = std::get_if<double>(&value)) return static_cast<int64_t>(*d);
    if (auto* v = std::get_if<std::vector<double>>(&value)) {
      std::vector<int64_t> out(v->size());
      std::transform(v->begin(), v->end(), out.begin(),
                     [](double x) { return static_cast<int64_t>(x); });
      return out;
    }
  }
  return value;
}

void combine_metric(MetricRule rule, MetricValue& current, const MetricValue& incoming) {
  if (rule == MetricRule::kProperty || std::holds_alternative<std::string>(incoming)) {
    current = incoming;
    return;
  }
  std::visit(
      [&](auto& cur) {
        using T = std::decay_t<decltype(cur)>;
        const T& in = std::get<T>(incoming);
        if constexpr (std::is_same_v<T, int64_t>) {
          cur = wrapping_add(cur, in);
        } else if constexpr (std::is_arithmetic_v<T>) {
          cur += in;
        } else if constexpr (std::is_same_v<T, std::string>) {
          cur = in;  // not reached: strings are replaced above
        } else {
          add_vectors(cur, in);
        }
      },
      current);
}

}  // namespace proton
