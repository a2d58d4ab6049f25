// proton-ctl: opens and closes windows in running processes started under `proton --idle`.
//
//   proton-ctl start [--name NAME] TARGET      (TARGET: a PID, `all` or a process name)
//   proton-ctl stop TARGET
//   proton-ctl window --duration 10s [--name NAME] TARGET
//   proton-ctl status TARGET
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace proton::control {

/// Runs the command line (without the program name); returns the exit status: 0 done, 1 the
/// process refused or could not be reached, 2 a usage error.
int run_ctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace proton::control
