#include "control/control_dir.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace proton::control {

std::string control_dir(const std::string& configured) {
  if (!configured.empty()) return configured;
  // Not one of Proton's variables: the session's runtime folder of the desktop/login standard.
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/proton";
  return "/tmp/proton-" + std::to_string(::getuid());
}

std::string ensure_private_dir(const std::string& dir, uid_t uid) {
  if (dir.empty()) return "the control folder is empty";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return "cannot create the control folder " + dir + ": " + std::strerror(errno);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return "cannot read the control folder " + dir + ": " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) return "the control folder " + dir + " is not a folder";
  if (st.st_uid != uid) {
    return "the control folder " + dir + " belongs to uid " + std::to_string(st.st_uid) +
           ", not to this user (uid " + std::to_string(uid) + ")";
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "the control folder " + dir + " has mode " + mode +
           ": others could reach its sockets (it must be 0700)";
  }
  return "";
}

std::string socket_path(const std::string& dir, long pid) {
  std::string path = dir + "/" + std::to_string(pid) + ".sock";
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) return "";
  return path;
}

bool peer_allowed(uid_t peer, uid_t self) {
  return peer == self;
}

std::string refusal_message(uid_t peer, uid_t self) {
  return "proton: refused a control request from uid " + std::to_string(peer) +
         " (this process runs as uid " + std::to_string(self) + ")";
}

}  // namespace proton::control
