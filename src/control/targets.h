// Which processes a proton-ctl TARGET names. TARGET is a PID, `all` (every process with a
// socket in the control folder: every rank of a job started under `proton --idle`), or a
// process name. A name matches a process whose /proc/<pid>/comm equals it (comm holds at most
// 15 bytes, so a longer name matches by its first 15), or one of whose command-line words
// equals it or ends in "/NAME": `python train.py` matches `python` and `train.py`,
// `/usr/bin/python3 /srv/serve.py` matches `python3`, `serve.py` and `/srv/serve.py`.
// Only processes with a socket in the control folder are ever considered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace proton::control {

/// A socket `<dir>/<pid>.sock` found in the control folder.
struct SocketEntry {
  long pid = 0;
  std::string path;
};

/// The sockets of the control folder, by pid; other files are skipped. Empty when the folder
/// cannot be read.
std::vector<SocketEntry> list_sockets(const std::string& dir);

/// What /proc says about a process: its comm and its command-line words.
struct ProcessInfo {
  std::string comm;
  std::vector<std::string> argv;
};

/// Reads `<proc_root>/<pid>/comm` and `cmdline`; nullopt when the process does not exist.
std::optional<ProcessInfo> read_process(const std::string& proc_root, long pid);

/// Whether `name` names the process (the rule above).
bool name_matches(std::string_view name, const ProcessInfo& process);

/// A process a command goes to. `alive` is false for a socket left by a process that ended.
struct Peer {
  long pid = 0;
  std::string socket;
  bool alive = true;
};

/// The peers of a TARGET that is not a PID: for `all` every socket (stale ones with
/// alive = false), for a name the living processes it matches.
std::vector<Peer> select_peers(std::string_view target, const std::string& dir,
                               const std::string& proc_root);

/// The rank a status reply ("idle; 2 windows written; rank 3 of 8") reports, if any.
std::optional<int64_t> rank_of_status(std::string_view status);

}  // namespace proton::control
