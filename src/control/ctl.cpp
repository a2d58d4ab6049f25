#include "control/ctl.h"

#include <charconv>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "control/client.h"
#include "control/control_dir.h"
#include "control/protocol.h"
#include "options/environment.h"

namespace proton::control {

namespace {

constexpr const char* kUsage =
    "usage: proton-ctl start [--name NAME] PID\n"
    "       proton-ctl stop PID\n"
    "       proton-ctl window --duration TIME [--name NAME] PID\n"
    "       proton-ctl status PID\n"
    "\n"
    "Opens and closes profiling windows in a process running under `proton --idle` (or\n"
    "PROTON_IDLE=1). Each window is written to NAME.w<k>.hatchet, never over an earlier one;\n"
    "the command prints where. TIME: 500ms, 10s, 2m, 1h. NAME: the output path without\n"
    "extension (default: the name the process was started with). The process listens on\n"
    "<dir>/<pid>.sock, <dir> being PROTON_CONTROL_DIR, $XDG_RUNTIME_DIR/proton or\n"
    "/tmp/proton-<uid>; only the same user may control it.\n";

int usage(std::ostream& err, const std::string& why) {
  err << "proton-ctl: " << why << "\n" << kUsage;
  return 2;
}

std::optional<long> parse_pid(const std::string& s) {
  long pid = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), pid);
  if (ec != std::errc() || ptr != s.data() + s.size() || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace

int run_ctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) return usage(err, "no command");
  if (args[0] == "-h" || args[0] == "--help") {
    out << kUsage;
    return 0;
  }
  Request r;
  const std::string& command = args[0];
  if (command == "start") {
    r.command = Command::kStart;
  } else if (command == "stop") {
    r.command = Command::kStop;
  } else if (command == "window") {
    r.command = Command::kWindow;
  } else if (command == "status") {
    r.command = Command::kStatus;
  } else {
    return usage(err, "unknown command '" + command + "'");
  }
  std::optional<std::string> target;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool takes_name = r.command == Command::kStart || r.command == Command::kWindow;
    if ((a == "--name" || a == "-n") && takes_name) {
      if (++i == args.size()) return usage(err, a + " needs a value");
      // Relative to this shell's folder, not to the profiled process's.
      r.name = std::filesystem::absolute(args[i]).string();
    } else if ((a == "--duration" || a == "-d") && r.command == Command::kWindow) {
      if (++i == args.size()) return usage(err, a + " needs a value");
      std::optional<uint64_t> ms = parse_duration_ms(args[i]);
      if (!ms) return usage(err, "--duration '" + args[i] + "' is not 1ms to 24h (e.g. 10s)");
      r.duration_ms = *ms;
    } else if (!a.empty() && a[0] == '-') {
      return usage(err, "unknown option '" + a + "' for " + command);
    } else if (target) {
      return usage(err, "one TARGET only");
    } else {
      target = a;
    }
  }
  if (!target) return usage(err, "no TARGET (the PID of the process)");
  if (r.command == Command::kWindow && r.duration_ms == 0) {
    return usage(err, "window needs --duration");
  }
  std::optional<long> pid = parse_pid(*target);
  if (!pid) {
    err << "proton-ctl: TARGET '" << *target
        << "' is not a PID (process names and jobs are not supported yet)\n";
    return 2;
  }
  std::string dir;
  try {
    dir = control_dir(env_value("PROTON_CONTROL_DIR"));
  } catch (const std::invalid_argument& e) {
    err << "proton-ctl: " << e.what() << "\n";
    return 2;
  }
  const std::string path = socket_path(dir, *pid);
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    err << "proton-ctl: process " << *pid << " has no control socket in " << dir
        << " (run it under `proton --idle` or with PROTON_IDLE=1)\n";
    return 1;
  }
  std::string error;
  std::string reply = send_request(path, format_request(r), error);
  if (!error.empty()) {
    err << "proton-ctl: process " << *pid << ": " << error << "\n";
    return 1;
  }
  if (reply.rfind("ok ", 0) != 0) {
    err << "proton-ctl: process " << *pid << ": "
        << (reply.rfind("error ", 0) == 0 ? reply.substr(6) : reply) << "\n";
    return 1;
  }
  const std::string text = reply.substr(3);
  switch (r.command) {
    case Command::kStart:
      out << "window opened in process " << *pid << "; `proton-ctl stop " << *pid
          << "` writes it to " << text << "\n";
      break;
    case Command::kWindow:
      out << "window opened in process " << *pid << " for " << r.duration_ms
          << " ms; it will be written to " << text << "\n";
      break;
    case Command::kStop:
      out << "wrote " << text << "\n";
      break;
    case Command::kStatus:
      out << "process " << *pid << ": " << text << "\n";
      break;
  }
  return 0;
}

}  // namespace proton::control
