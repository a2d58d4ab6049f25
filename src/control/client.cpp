#include "control/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
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

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on `fd` until the deadline: true when ready.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int left = ms_left(deadline);
    const int ready = left > 0 ? ::poll(&p, 1, left) : 0;
    if (ready < 0 && errno == EINTR) continue;
    return ready > 0;
  }
}

}  // namespace

Reply ask(const std::string& path, const std::string& line, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  const std::string no_answer =
      "no answer within " + std::to_string(timeout_ms) + " ms (socket " + path + ")";
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path)
    return {Outcome::kFailed, "socket path too long: " + path};
  // Non-blocking throughout: a process that accepts nothing (stopped, or its backlog full)
  // costs at most the time limit, in connect() as in the wait for the reply.
  Fd sock{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)};
  if (sock.fd < 0) return {Outcome::kFailed, std::string("socket: ") + std::strerror(errno)};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  for (;;) {
    if (::connect(sock.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {  // the listener's backlog is full: it accepts nothing now
      if (ms_left(deadline) == 0) return {Outcome::kNoAnswer, no_answer};
      ::poll(nullptr, 0, std::min(10, ms_left(deadline)));
      continue;
    }
    if (errno == EINPROGRESS) {
      int error = 0;
      socklen_t len = sizeof error;
      if (!wait_for(sock.fd, POLLOUT, deadline)) return {Outcome::kNoAnswer, no_answer};
      if (::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
      if (error == 0) break;
      errno = error;
    }
    if (errno == ECONNREFUSED || errno == ENOENT) {
      return {Outcome::kEnded, "nothing listens at " + path + " (the process has ended)"};
    }
    return {Outcome::kFailed, "cannot reach " + path + ": " + std::strerror(errno)};
  }
  const std::string out = line + "\n";
  for (size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::send(sock.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      if (!wait_for(sock.fd, POLLOUT, deadline)) return {Outcome::kNoAnswer, no_answer};
    } else {
      return {Outcome::kFailed, std::string("cannot send the request: ") + std::strerror(errno)};
    }
  }
  std::string reply;
  char buf[512];
  for (;;) {
    if (!wait_for(sock.fd, POLLIN, deadline)) return {Outcome::kNoAnswer, no_answer};
    const ssize_t n = ::recv(sock.fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
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
