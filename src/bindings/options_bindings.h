// Bindings of session options: the mode grammar, Proton's environment variables.
#pragma once

#include <nanobind/nanobind.h>

namespace proton::python {

void register_options(nanobind::module_& m);

}  // namespace proton::python
