// Bindings of session options: the mode grammar, Proton's environment variables.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <string>

#include "options/session_options.h"

namespace proton::python {

/// proton.start's arguments (and the knobs profile.py passes) as a SessionConfig.
SessionConfig session_config(std::string name, std::string context, std::string data,
                             std::string backend, std::string mode, bool kernel_records,
                             std::optional<bool> enable_nvtx, std::string cupti_lib_dir,
                             int64_t profile_buffer_size = 0);

void register_options(nanobind::module_& m);

}  // namespace proton::python
