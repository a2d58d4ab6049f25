// context="python": see python_context.cpp.
#pragma once

#include <nanobind/nanobind.h>

#include "common/ids.h"

namespace proton::python {

/// The calling thread's Python call path plus its state (kRootContext without Python frames).
/// Callable without the GIL; never throws. Installed as LaunchStage::python_context_provider.
ContextId current_python_context() noexcept;

/// Installs the provider and adds the module's python-context functions.
void register_python_context(nanobind::module_& m);

}  // namespace proton::python
