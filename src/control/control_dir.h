// Where control sockets live, and who may talk to them. One socket per process,
// <dir>/<pid>.sock, in a folder owned by the user with mode 0700 (the socket itself 0600);
// nothing listens on a network port. The folder is PROTON_CONTROL_DIR, else
// $XDG_RUNTIME_DIR/proton, else /tmp/proton-<uid>.
#pragma once

#include <sys/types.h>

#include <string>

namespace proton::control {

/// The control folder for this user (`configured`: PROTON_CONTROL_DIR's value, "" when unset).
std::string control_dir(const std::string& configured);

/// Creates `dir` (mode 0700) if missing and checks it is a real folder owned by `uid` that no
/// one else can enter. "" when it is usable, else one line saying why not.
std::string ensure_private_dir(const std::string& dir, uid_t uid);

/// The socket of process `pid`. "" when the path is too long for a Unix socket.
std::string socket_path(const std::string& dir, long pid);

/// Whether a peer of this uid may control a process running as `self`: the same user only.
bool peer_allowed(uid_t peer, uid_t self);
/// The line logged for a refused peer.
std::string refusal_message(uid_t peer, uid_t self);

}  // namespace proton::control
