#include "control/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace proton::control {

std::string send_request(const std::string& path, const std::string& line, std::string& error) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    error = "socket path too long: " + path;
    return "";
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = std::string("socket: ") + std::strerror(errno);
    return "";
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = errno == ECONNREFUSED ? "nothing listens at " + path + " (the process has ended)"
                                  : "cannot reach " + path + ": " + std::strerror(errno);
    ::close(fd);
    return "";
  }
  std::string out = line + "\n";
  if (::send(fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    error = std::string("cannot send the request: ") + std::strerror(errno);
    ::close(fd);
    return "";
  }
  // Writing a window may take a while (flushing the GPU's records): wait up to a minute.
  std::string reply;
  char buf[512];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 60'000) <= 0) {
      error = "no answer from " + path + " within 60 s";
      break;
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (reply.empty()) error = "the process closed the connection without answering";
      break;
    }
    reply.append(buf, static_cast<size_t>(n));
    if (size_t nl = reply.find('\n'); nl != std::string::npos) {
      reply.resize(nl);
      break;
    }
  }
  ::close(fd);
  return error.empty() ? reply : "";
}

}  // namespace proton::control
