#include "control/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace proton::control {

namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Reply ask(const std::string& path, const std::string& line, int timeout_ms) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path)
    return {Outcome::kFailed, "socket path too long: " + path};
  Fd sock{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return {Outcome::kFailed, std::string("socket: ") + std::strerror(errno)};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (::connect(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ECONNREFUSED || errno == ENOENT) {
      return {Outcome::kEnded, "nothing listens at " + path + " (the process has ended)"};
    }
    return {Outcome::kFailed, "cannot reach " + path + ": " + std::strerror(errno)};
  }
  std::string out = line + "\n";
  if (::send(sock.fd, out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
    return {Outcome::kFailed, std::string("cannot send the request: ") + std::strerror(errno)};
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string reply;
  char buf[512];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{sock.fd, POLLIN, 0};
    int ready = left.count() > 0 ? ::poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return {Outcome::kNoAnswer,
              "no answer within " + std::to_string(timeout_ms) + " ms (socket " + path + ")"};
    }
    ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n <= 0) {
      return {Outcome::kFailed, "the process closed the connection without answering"};
    }
    reply.append(buf, static_cast<size_t>(n));
    if (size_t nl = reply.find('\n'); nl != std::string::npos) {
      reply.resize(nl);
      return {Outcome::kAnswered, std::move(reply)};
    }
  }
}

std::string send_request(const std::string& path, const std::string& line, std::string& error) {
  Reply r = ask(path, line, 60'000);
  if (r.outcome == Outcome::kAnswered) return r.text;
  error = std::move(r.text);
  return "";
}

}  // namespace proton::control
