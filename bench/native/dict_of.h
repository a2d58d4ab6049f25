// A struct's fields as a Python dict, for the bench module's counters:
//   dict_of(stats, "samples", &Stats::samples, "drains", &Stats::drains, ...)
#pragma once

#include <nanobind/nanobind.h>

namespace proton::bench {

template <class S>
void put_fields(nanobind::dict&, const S&) {}

template <class S, class M, class... Rest>
void put_fields(nanobind::dict& d, const S& s, const char* name, M S::*field, Rest... rest) {
  d[name] = s.*field;
  put_fields(d, s, rest...);
}

template <class S, class... Fields>
nanobind::dict dict_of(const S& s, Fields... fields) {
  nanobind::dict d;
  put_fields(d, s, fields...);
  return d;
}

}  // namespace proton::bench
