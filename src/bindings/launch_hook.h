// hook="triton": see launch_hook.cpp.
#pragma once

#include <nanobind/nanobind.h>

namespace proton::python {

/// Adds the launch-hook functions (_launch_enter/_launch_exit, the filter) to the module.
void register_launch_hook(nanobind::module_& m);

}  // namespace proton::python
