// Windows of an always-on process: one session at a time, opened and closed by a step schedule
// (proton.step), the control socket (proton-ctl) or the toggle signal. Each window is a
// session of its own, written to a name never used before, NAME.w<k>, so that no window
// overwrites an earlier one (of this process or of an earlier run in the same folder). Between
// windows no session exists, so no backend runs: the GPU backend starts with a window's session
// and stops, releasing the vendor's tracing, when it is written.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "control/schedule.h"
#include "options/session_options.h"

namespace proton::control {

/// A window's outcome for the caller: where it is (or will be) written.
struct WindowResult {
  std::string path;
  uint64_t index = 0;
};

class WindowController {
 public:
  static WindowController& get();

  /// The options every window starts with (its name the base of the window names), and how
  /// often an open window's tree is written to its file while it records (0: only when it
  /// closes), so that a process killed by SIGKILL leaves what it recorded up to the last flush.
  /// Throws std::invalid_argument for options a session would refuse, or a flush period for
  /// windows that keep no tree, before anything changes.
  void configure(const SessionConfig& base, uint64_t flush_ms = 0);
  /// The flush period configured (0: none).
  uint64_t flush_ms() const;
  /// How many periodic flushes have written an open window so far in this process (tests).
  uint64_t flushes() const;
  bool configured() const;

  /// Opens a window named base.w<k> (or name.w<k>); recorded steps, when a schedule knows them,
  /// go on the profile's root. Throws std::logic_error when a window is open or nothing was
  /// configured, std::invalid_argument when the session cannot start.
  WindowResult open(const std::string& name = "", int64_t first_step = -1, int64_t last_step = -1);
  /// Writes the open window and ends its session. Throws std::logic_error when none is open.
  WindowResult close();
  /// Drops what the open window recorded so far (a schedule's warm-up steps); it keeps recording.
  void discard_so_far();
  /// Closes the open window when there is one (process exit); never throws.
  std::optional<WindowResult> close_if_open() noexcept;

  bool is_open() const;
  /// The path the open window will be written to ("" when none is open).
  std::string open_path() const;
  uint64_t windows_written() const;

  /// A step schedule over the configured options: windows open and close as proton.step()
  /// moves through it (its step 0 is entered now). Throws std::invalid_argument for a schedule
  /// that cannot run. With spec.phases, the schedule's windows are the phases of one session
  /// (NAME.w<k>): between them it is paused, at each next window it advances a phase, and it
  /// is written (one file per phase once it has more than one, NAME.w<k>.part_<p>, or with
  /// mode="periodic_flushing" each phase as it completes) when the last window closes, the
  /// schedule ends or the process exits.
  void set_schedule(const ScheduleSpec& spec);
  /// Ends the schedule, closing a window it opened.
  void clear_schedule();
  /// Enters the next step; returns the window written by this step, if one was.
  std::optional<WindowResult> step();
  uint64_t current_step() const;

  /// Forgets every window and the configuration (tests).
  void reset_for_testing();

 private:
  WindowController() = default;
  WindowResult open_locked(const std::string& name, int64_t first_step, int64_t last_step);
  WindowResult close_locked();  // writes the open window, or a phased schedule's profile
  void pause_locked();          // a phased schedule's window ends: its session waits, paused
  void resume_locked(int64_t first_step, int64_t last_step);  // the next window: a new phase
  std::optional<WindowResult> apply_locked(const StepActions& actions);
  void discard_locked();
  std::string unique_name_locked(const std::string& base);
  void start_flusher_locked(SessionId id);
  void stop_flusher_locked();

  mutable std::mutex mu_;
  std::optional<SessionConfig> base_;
  std::optional<SessionId> session_;  // the open window's session
  std::optional<SessionId> paused_;   // a phased schedule's session between its windows
  uint32_t phase_ = 0;                // the phase the open window records in
  pid_t owner_pid_ = 0;               // the process that opened it (a fork child never writes it)
  WindowResult open_;                 // the open window's path and number
  uint64_t next_index_ = 0;           // window numbers count up per process, never reused
  uint64_t written_ = 0;
  std::optional<ScheduleSpec> schedule_;
  uint64_t step_ = 0;
  uint64_t flush_ms_ = 0;

  // The open window's periodic flush (flush_ms_ > 0): a thread that writes the window's tree
  // every period until told to stop. It never takes mu_, so close() may join it under mu_.
  struct Flusher {
    std::mutex mu;
    std::condition_variable wake;
    bool stop = false;
  };
  std::unique_ptr<Flusher> flusher_state_;  // shared with flusher_, which is joined before it goes
  std::thread flusher_;
  std::atomic<uint64_t> flushes_{0};
  std::atomic<bool> warming_up_{false};  // the open window records a schedule's warm-up steps
};

}  // namespace proton::control
