// Bindings of the always-on control (control/): window options, step schedules, windows.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "bindings/options_bindings.h"
#include "control/control_dir.h"
#include "control/protocol.h"
#include "control/server.h"
#include "control/windows.h"
#include "options/environment.h"

namespace nb = nanobind;

namespace proton::python {

namespace {

using control::WindowController;
using control::WindowResult;

std::pair<std::string, uint64_t> as_pair(const WindowResult& r) {
  return {r.path, r.index};
}

std::optional<std::string> path_of(const std::optional<WindowResult>& r) {
  return r ? std::optional<std::string>(r->path) : std::nullopt;
}

}  // namespace

void register_control(nb::module_& m) {
  m.def(
      "control_configure",
      [](std::string name, std::string context, std::string data, std::string backend,
         std::string mode, uint64_t flush_ms, bool kernel_records, std::optional<bool> enable_nvtx,
         std::string cupti_lib_dir, int64_t profile_buffer_size) {
        WindowController::get().configure(
            session_config(std::move(name), std::move(context), std::move(data), std::move(backend),
                           std::move(mode), kernel_records, enable_nvtx, std::move(cupti_lib_dir),
                           profile_buffer_size),
            flush_ms);
      },
      nb::arg("name"), nb::arg("context"), nb::arg("data"), nb::arg("backend"), nb::arg("mode"),
      nb::arg("flush_ms") = 0, nb::arg("kernel_records") = true,
      nb::arg("enable_nvtx") = nb::none(), nb::arg("cupti_lib_dir") = "",
      nb::arg("profile_buffer_size") = 0);
  m.def("control_configured", [] { return WindowController::get().configured(); });
  m.def("control_flush_ms", [] { return WindowController::get().flush_ms(); });
  m.def("control_flushes", [] { return WindowController::get().flushes(); });
  // "2s", "500ms", "1m" or plain milliseconds, as proton-ctl takes them; None when malformed.
  m.def("control_parse_duration_ms",
        [](std::string text) { return control::parse_duration_ms(text); });
  m.def(
      "control_open", [](std::string name) { return as_pair(WindowController::get().open(name)); },
      nb::arg("name") = "", nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_close", [] { return as_pair(WindowController::get().close()); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_close_if_open", [] { return path_of(WindowController::get().close_if_open()); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("control_open_path", [] { return WindowController::get().open_path(); });
  m.def("control_windows_written", [] { return WindowController::get().windows_written(); });
  m.def(
      "control_schedule",
      [](uint64_t wait, uint64_t warmup, uint64_t active, uint64_t repeat, uint64_t skip_first,
         bool phases) {
        WindowController::get().set_schedule({wait, warmup, active, repeat, skip_first, phases});
      },
      nb::arg("wait"), nb::arg("warmup"), nb::arg("active"), nb::arg("repeat"),
      nb::arg("skip_first"), nb::arg("phases") = false, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_clear_schedule", [] { WindowController::get().clear_schedule(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_step", [] { return path_of(WindowController::get().step()); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("control_current_step", [] { return WindowController::get().current_step(); });
  // Idle mode's switch, flush period and control socket: what PROTON_IDLE, PROTON_FLUSH_EVERY,
  // PROTON_CONTROL_DIR and PROTON_CONTROL_SIGNAL say (checked, a bad value is a ValueError naming
  // it).
  m.def("control_idle_requested", [] { return read_environment().idle.value_or(false); });
  m.def("control_env_flush_ms", [] { return read_environment().flush_every_ms; });
  m.def(
      "control_serve",
      [] {
        Environment env = read_environment();
        const int sig = env.control_signal == "off"    ? 0
                        : env.control_signal == "usr1" ? SIGUSR1
                                                       : SIGUSR2;
        return control::ControlServer::get().start(control::control_dir(env.control_dir), sig);
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_stop_serving", [] { control::ControlServer::get().stop(); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("control_socket_path", [] { return control::ControlServer::get().socket_path(); });
  m.def(
      "control_answer_for_testing",
      [](std::string line, int64_t uid) {
        return control::ControlServer::get().answer(line, static_cast<uid_t>(uid));
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "control_reset_for_testing", [] { WindowController::get().reset_for_testing(); },
      nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace proton::python
