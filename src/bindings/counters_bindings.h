// Bindings of hardware counters: metric listing and collection statistics.
#pragma once

#include <nanobind/nanobind.h>

namespace proton::python {

void register_counters(nanobind::module_& m);

}  // namespace proton::python
