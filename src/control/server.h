// The control socket's server: a thread per process, listening on <dir>/<pid>.sock (Unix domain,
// mode 0600 in a 0700 folder; control/control_dir.h), answering one request per connection
// (control/protocol.h) by opening and closing windows (control/windows.h). A request from
// another user is refused and logged. A signal (SIGUSR2 unless configured otherwise) toggles a
// window too: its handler only writes a byte to a pipe the thread watches.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace proton::control {

class ControlServer {
 public:
  static ControlServer& get();

  /// Listens at socket_path(dir, getpid()) and, when `toggle_signal` != 0, toggles a window on
  /// that signal (only if the program left it at its default action). Returns the socket's
  /// path; throws std::runtime_error with one line when it cannot listen. Listening already:
  /// returns the same path.
  std::string start(const std::string& dir, int toggle_signal);
  /// Stops the thread, removes the socket and gives the signal back. Never throws.
  void stop() noexcept;
  std::string socket_path() const;

  /// The reply to one request line from a peer running as `peer_uid` (the server's thread calls
  /// it for every connection; tests call it with any uid).
  std::string answer(std::string_view line, uid_t peer_uid);

 private:
  ControlServer() = default;
  void run(int listen_fd, int wake_fd, int signal_fd);
  void serve(int fd);
  void toggle();
  void close_timed_window();
  int wait_ms() const;

  mutable std::mutex mu_;  // guards the fields below but the thread's
  std::thread thread_;
  std::string path_;
  pid_t owner_pid_ = 0;  // the process whose thread serves
  int stop_write_ = -1;  // written to end the thread
  int toggle_signal_ = 0;
  // A window opened by `window MS`: closed at the deadline if it is still the one open.
  std::string timed_path_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace proton::control
