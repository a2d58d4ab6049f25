#include "control/ctl.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <thread>

#include "control/client.h"
#include "control/control_dir.h"
#include "control/protocol.h"
#include "control/targets.h"
#include "options/environment.h"

namespace proton::control {

namespace {

constexpr const char* kUsage =
    "usage: proton-ctl start [--name NAME] [--timeout TIME] TARGET\n"
    "       proton-ctl stop [--timeout TIME] TARGET\n"
    "       proton-ctl window --duration TIME [--name NAME] [--timeout TIME] TARGET\n"
    "       proton-ctl status [--timeout TIME] TARGET\n"
    "\n"
    "Opens and closes profiling windows in processes running under `proton --idle` (or\n"
    "PROTON_IDLE=1). Each window is written to NAME.w<k>.hatchet, never over an earlier one;\n"
    "the command prints where. TIME: 500ms, 10s, 2m, 1h. NAME: the output path without\n"
    "extension (default: the name the process was started with). --timeout: how long to wait\n"
    "for each process's answer (default 60s).\n"
    "\n"
    "TARGET is one of\n"
    "  PID   one process;\n"
    "  all   every process with a control socket (every rank of a job);\n"
    "  NAME  every such process whose /proc/<pid>/comm is NAME, or one of whose command-line\n"
    "        words is NAME or ends in /NAME (`python train.py` matches python and train.py).\n"
    "For `all` and NAME, each process gets the command at once; one line per process says\n"
    "where its window goes (with its rank in a job); --name given to several processes\n"
    "becomes NAME.rank<R> (a rank of a job) or NAME.pid<P> (any other), one file each.\n"
    "A socket left by a process that ended (killed by SIGKILL) is reported as stale and\n"
    "removed; a process that does not answer within --timeout (connecting included) is\n"
    "reported as `no answer`. Each is one line on stderr and fails the command; the other\n"
    "processes still get it. With NAME, stale sockets are removed too but fail nothing.\n"
    "\n"
    "Each process listens on <dir>/<pid>.sock, <dir> being PROTON_CONTROL_DIR,\n"
    "$XDG_RUNTIME_DIR/proton or /tmp/proton-<uid>; only the same user may control it.\n"
    "Exit status: 0 every process did it; 1 one refused, did not answer or had ended, or\n"
    "none matched; 2 a usage error.\n";

constexpr int kDefaultTimeoutMs = 60'000;

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

// One process's answer to a command sent to a whole job or a name.
struct PeerResult {
  Peer peer;
  std::optional<int64_t> rank;
  Reply reply;
};

// Asks one process: its status first when the command is not `status` (the rank it reports),
// then the command.
// With --name and several processes, each one's name gets ".rank<R>" (a rank of a job) or
// ".pid<P>" (any other process), so no process writes over another's window.
// A peer missing from this /proc (alive = false) is still asked: nothing listens at a socket
// whose process ended (refused at once), and a process of another PID namespace sharing the
// folder answers.
PeerResult ask_peer(const Peer& peer, Request r, bool several, int timeout_ms) {
  PeerResult result{peer, std::nullopt, {}};
  if (r.command != Command::kStatus) {
    Reply status = ask(peer.socket, format_request(Request{}), timeout_ms);
    if (status.outcome != Outcome::kAnswered) {
      result.reply = std::move(status);
      return result;
    }
    result.rank = rank_of_status(status.text);
    if (several && !r.name.empty()) {
      r.name +=
          result.rank ? ".rank" + std::to_string(*result.rank) : ".pid" + std::to_string(peer.pid);
    }
  }
  result.reply = ask(peer.socket, format_request(r), timeout_ms);
  if (r.command == Command::kStatus && result.reply.outcome == Outcome::kAnswered) {
    result.rank = rank_of_status(result.reply.text);
  }
  return result;
}

// A socket nothing listens at. When its process has ended (SIGKILL leaves the socket behind),
// it is removed, so the next command does not meet it; one line says which.
void report_stale(long pid, const std::string& socket, std::ostream& err) {
  err << "proton-ctl: stale socket " << socket << ": ";
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
    std::error_code ec;
    err << "process " << pid << " has ended"
        << (std::filesystem::remove(socket, ec) ? " (socket removed)" : "") << "\n";
  } else {
    err << "nothing listens there (process " << pid
        << " is running but does not serve it: another program took its pid?)\n";
  }
}

std::string label(const PeerResult& p) {
  std::string s = "process " + std::to_string(p.peer.pid);
  if (p.rank) s += " (rank " + std::to_string(*p.rank) + ")";
  return s;
}

// `all` or a process name: the command goes to every matching process at once, so one that
// hangs costs at most the time limit and never delays the others.
int run_many(const std::string& target, const Request& r, const std::string& dir, int timeout_ms,
             std::ostream& out, std::ostream& err) {
  if (target != "all") {
    // A process that ended has no name left to match, but its socket may be one of the
    // target's (a rank killed by SIGKILL): removed and reported, failing nothing, since it may
    // as well have been another program's. Only a refused connection counts as ended.
    for (const Peer& p : select_peers("all", dir, "/proc")) {
      if (!p.alive &&
          ask(p.socket, format_request(Request{}), std::min(timeout_ms, 1000)).outcome ==
              Outcome::kEnded) {
        report_stale(p.pid, p.socket, err);
      }
    }
  }
  std::vector<Peer> peers = select_peers(target, dir, "/proc");
  if (peers.empty()) {
    err << "proton-ctl: "
        << (target == "all" ? std::string("no process") : "no process named '" + target + "'")
        << " has a control socket in " << dir
        << " (run it under `proton --idle` or with PROTON_IDLE=1)\n";
    return 1;
  }
  const auto alive =
      std::count_if(peers.begin(), peers.end(), [](const Peer& p) { return p.alive; });
  std::vector<PeerResult> results(peers.size());
  {
    std::vector<std::thread> threads;
    threads.reserve(peers.size());
    for (size_t i = 0; i < peers.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = ask_peer(peers[i], r, alive > 1, timeout_ms); });
    }
    for (std::thread& t : threads)
      t.join();
  }
  // Ranks in order, then processes that are no rank of a job, by pid.
  std::stable_sort(results.begin(), results.end(), [](const PeerResult& a, const PeerResult& b) {
    if (a.rank.has_value() != b.rank.has_value()) return a.rank.has_value();
    return a.rank.value_or(0) < b.rank.value_or(0);
  });
  int done = 0;
  bool failed = false;
  for (const PeerResult& p : results) {
    const std::string& text = p.reply.text;
    switch (p.reply.outcome) {
      case Outcome::kAnswered:
        if (text.rfind("ok ", 0) != 0) {
          err << "proton-ctl: " << label(p) << ": "
              << (text.rfind("error ", 0) == 0 ? text.substr(6) : text) << "\n";
          failed = true;
          break;
        }
        ++done;
        out << label(p) << ": ";
        switch (r.command) {
          case Command::kStart:
            out << "window opened, to be written to " << text.substr(3) << "\n";
            break;
          case Command::kWindow:
            out << "window opened for " << r.duration_ms << " ms, to be written to "
                << text.substr(3) << "\n";
            break;
          case Command::kStop:
            out << "wrote " << text.substr(3) << "\n";
            break;
          case Command::kStatus: {
            std::string status = text.substr(3);
            if (p.rank) status.resize(status.rfind("; rank "));  // said in the label
            out << status << "\n";
            break;
          }
        }
        break;
      case Outcome::kEnded:
        report_stale(p.peer.pid, p.peer.socket, err);
        failed = true;
        break;
      case Outcome::kNoAnswer:
        err << "proton-ctl: " << label(p) << ": no answer within " << timeout_ms << " ms\n";
        failed = true;
        break;
      case Outcome::kFailed:
        err << "proton-ctl: " << label(p) << ": " << text << "\n";
        failed = true;
        break;
    }
  }
  return failed || done == 0 ? 1 : 0;
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
  int timeout_ms = kDefaultTimeoutMs;
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
    } else if (a == "--timeout" || a == "-t") {
      if (++i == args.size()) return usage(err, a + " needs a value");
      std::optional<uint64_t> ms = parse_duration_ms(args[i]);
      if (!ms) return usage(err, "--timeout '" + args[i] + "' is not 1ms to 24h (e.g. 10s)");
      timeout_ms = static_cast<int>(*ms);
    } else if (!a.empty() && a[0] == '-') {
      return usage(err, "unknown option '" + a + "' for " + command);
    } else if (target) {
      return usage(err, "one TARGET only");
    } else {
      target = a;
    }
  }
  if (!target) return usage(err, "no TARGET (a PID, a process name or `all`)");
  if (r.command == Command::kWindow && r.duration_ms == 0) {
    return usage(err, "window needs --duration");
  }
  std::string dir;
  try {
    dir = control_dir(env_value("PROTON_CONTROL_DIR"));
  } catch (const std::invalid_argument& e) {
    err << "proton-ctl: " << e.what() << "\n";
    return 2;
  }
  std::optional<long> pid = parse_pid(*target);
  if (!pid) return run_many(*target, r, dir, timeout_ms, out, err);
  const std::string path = socket_path(dir, *pid);
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    err << "proton-ctl: process " << *pid << " has no control socket in " << dir
        << " (run it under `proton --idle` or with PROTON_IDLE=1)\n";
    return 1;
  }
  Reply answer = ask(path, format_request(r), timeout_ms);
  if (answer.outcome == Outcome::kEnded) {
    report_stale(*pid, path, err);
    return 1;
  }
  if (answer.outcome != Outcome::kAnswered) {
    err << "proton-ctl: process " << *pid << ": " << answer.text << "\n";
    return 1;
  }
  const std::string& reply = answer.text;
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
