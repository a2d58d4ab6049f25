#include "control/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "control/control_dir.h"
#include "control/protocol.h"
#include "control/windows.h"
#include "io/run_info.h"

namespace proton::control {

namespace {

// The toggle signal's pipe: the handler writes one byte (async-signal-safe), the thread reads.
volatile std::sig_atomic_t g_signal_write = -1;

extern "C" void on_toggle_signal(int) {
  const int saved = errno;
  const int fd = g_signal_write;
  if (fd >= 0) {
    char byte = 't';
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved;
}

void log_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

void drain(int fd) {
  char buf[64];
  while (::read(fd, buf, sizeof buf) > 0) {
  }
}

// Reads one line (at most kMaxLine bytes) with a short time limit: a peer that dies or stalls
// mid-request costs the server at most that long. False when no whole line came.
bool read_line(int fd, std::string& line) {
  constexpr int kTimeoutMs = 2000;
  char buf[512];
  while (line.size() <= kMaxLine) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kTimeoutMs) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;  // closed (a dead peer) or an error
    line.append(buf, static_cast<size_t>(n));
    if (size_t nl = line.find('\n'); nl != std::string::npos) {
      line.resize(nl);
      return true;
    }
  }
  return true;  // too long: the parser says so
}

void send_line(int fd, const std::string& reply) {
  std::string out = reply + "\n";
  // MSG_NOSIGNAL: a peer gone before the reply is no SIGPIPE for the profiled program.
  [[maybe_unused]] ssize_t n = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
}

}  // namespace

ControlServer& ControlServer::get() {
  static ControlServer* server = new ControlServer();  // leaked: its thread may outlive main
  return *server;
}

std::string ControlServer::start(const std::string& dir, int toggle_signal) {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return path_;
  if (std::string why = ensure_private_dir(dir, ::geteuid()); !why.empty()) {
    throw std::runtime_error(why);
  }
  std::string path = control::socket_path(dir, static_cast<long>(::getpid()));
  if (path.empty()) throw std::runtime_error("the control folder's path is too long: " + dir);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(errno_text("control socket"));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ::unlink(path.c_str());  // a socket left by an earlier process of the same pid
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::chmod(path.c_str(), 0600) != 0 || ::listen(fd, 16) != 0) {
    std::string why = errno_text(("control socket " + path).c_str());
    ::close(fd);
    ::unlink(path.c_str());
    throw std::runtime_error(why);
  }
  int stop_pipe[2], signal_pipe[2];
  if (::pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    throw std::runtime_error(errno_text("control pipe"));
  }
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    ::close(stop_pipe[0]);
    ::close(stop_pipe[1]);
    throw std::runtime_error(errno_text("control pipe"));
  }
  toggle_signal_ = 0;
  if (toggle_signal != 0) {
    struct sigaction old {};
    ::sigaction(toggle_signal, nullptr, &old);
    if (old.sa_handler == SIG_DFL && (old.sa_flags & SA_SIGINFO) == 0) {
      g_signal_write = signal_pipe[1];
      struct sigaction sa {};
      sa.sa_handler = on_toggle_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(toggle_signal, &sa, nullptr);
      toggle_signal_ = toggle_signal;
    } else {
      log_line("proton: signal " + std::to_string(toggle_signal) +
               " has the program's own handler; it does not toggle windows (use proton-ctl)");
    }
  }
  path_ = path;
  owner_pid_ = ::getpid();
  stop_write_ = stop_pipe[1];
  const int stop_read = stop_pipe[0], signal_read = signal_pipe[0], signal_write = signal_pipe[1];
  thread_ = std::thread([this, fd, stop_read, signal_read, signal_write] {
    run(fd, stop_read, signal_read);
    ::close(fd);
    ::close(stop_read);
    ::close(signal_read);
    ::close(signal_write);
  });
  return path_;
}

void ControlServer::stop() noexcept {
  std::thread thread;
  int signal = 0;
  std::string path;
  {
    std::lock_guard lock(mu_);
    if (!thread_.joinable()) return;
    if (owner_pid_ != ::getpid()) {
      // A fork child: the thread and the socket are the parent's. The handle is let go without
      // join or detach (the thread does not exist here), and the socket stays.
      [[maybe_unused]] auto* parents = new std::thread(std::move(thread_));
      path_.clear();
      return;
    }
    char byte = 'q';
    [[maybe_unused]] ssize_t n = ::write(stop_write_, &byte, 1);
    thread = std::move(thread_);
    signal = toggle_signal_;
    path = path_;
  }
  if (signal != 0) {
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    ::sigaction(signal, &sa, nullptr);
  }
  if (thread.get_id() == std::this_thread::get_id()) {
    thread.detach();
  } else {
    thread.join();
  }
  g_signal_write = -1;
  std::lock_guard lock(mu_);
  ::close(stop_write_);
  stop_write_ = -1;
  toggle_signal_ = 0;
  ::unlink(path.c_str());
  path_.clear();
  timed_path_.clear();
}

std::string ControlServer::socket_path() const {
  std::lock_guard lock(mu_);
  return path_;
}

int ControlServer::wait_ms() const {
  std::lock_guard lock(mu_);
  if (timed_path_.empty()) return -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline_ - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

void ControlServer::run(int listen_fd, int stop_fd, int signal_fd) {
  for (;;) {
    pollfd fds[3] = {{stop_fd, POLLIN, 0}, {signal_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}};
    int ready = ::poll(fds, 3, wait_ms());
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    close_timed_window();
    if (fds[1].revents & POLLIN) {
      drain(signal_fd);
      toggle();
    }
    if (fds[2].revents & POLLIN) {
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        serve(fd);
        ::close(fd);
      }
    }
  }
}

void ControlServer::serve(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return;
  if (!peer_allowed(cred.uid, ::geteuid())) {
    log_line(refusal_message(cred.uid, ::geteuid()));
    send_line(fd, error_reply("refused: this process belongs to another user"));
    return;
  }
  std::string line;
  if (!read_line(fd, line)) return;  // the peer died or stalled: nothing to answer
  send_line(fd, answer(line, cred.uid));
}

std::string ControlServer::answer(std::string_view line, uid_t peer_uid) {
  if (!peer_allowed(peer_uid, ::geteuid())) {
    log_line(refusal_message(peer_uid, ::geteuid()));
    return error_reply("refused: this process belongs to another user");
  }
  Parsed parsed = parse_request(line);
  if (!parsed.request) return error_reply(parsed.error);
  const Request& r = *parsed.request;
  WindowController& windows = WindowController::get();
  try {
    switch (r.command) {
      case Command::kStatus: {
        std::string open = windows.open_path();
        std::string text =
            open.empty() ? "idle; " + std::to_string(windows.windows_written()) + " windows written"
                         : "window open, to be written to " + open;
        if (!open.empty() && windows.flush_ms() > 0) {  // what a SIGKILL would leave
          text += " (flushed every " + std::to_string(windows.flush_ms()) + " ms)";
        }
        // One rank of a job says which (proton-ctl prints it for every process of a job).
        if (RunInfo info = run_info(); info.is_rank()) {
          text += "; rank " + std::to_string(info.rank);
          if (info.world_size > 0) text += " of " + std::to_string(info.world_size);
        }
        return ok_reply(text);
      }
      case Command::kStart:
        return ok_reply(windows.open(r.name).path);
      case Command::kWindow: {
        std::string path = windows.open(r.name).path;
        std::lock_guard lock(mu_);
        timed_path_ = path;
        deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(r.duration_ms);
        return ok_reply(path);
      }
      case Command::kStop: {
        std::string path = windows.close().path;
        std::lock_guard lock(mu_);
        timed_path_.clear();
        return ok_reply(path);
      }
    }
  } catch (const std::exception& e) {
    return error_reply(e.what());
  }
  return error_reply("unhandled command");
}

void ControlServer::close_timed_window() {
  std::string timed;
  {
    std::lock_guard lock(mu_);
    if (timed_path_.empty() || std::chrono::steady_clock::now() < deadline_) return;
    timed = std::move(timed_path_);
    timed_path_.clear();
  }
  WindowController& windows = WindowController::get();
  if (windows.open_path() != timed) return;  // stopped or replaced meanwhile
  try {
    log_line("proton: window written to " + windows.close().path);
  } catch (const std::exception& e) {
    log_line(std::string("proton: the window could not be written: ") + e.what());
  }
}

void ControlServer::toggle() {
  WindowController& windows = WindowController::get();
  try {
    if (windows.is_open()) {
      log_line("proton: window written to " + windows.close().path);
    } else {
      log_line("proton: window opened, to be written to " + windows.open().path);
    }
  } catch (const std::exception& e) {
    log_line(std::string("proton: window toggle failed: ") + e.what());
  }
}

}  // namespace proton::control
