#include "control/windows.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string_view>

#include "session/runtime.h"

namespace proton::control {

namespace {

constexpr std::string_view kExtensions[] = {".hatchet", ".hatchet_msgpack", ".chrome_trace"};

std::string strip_extension(std::string name) {
  for (std::string_view ext : kExtensions) {
    if (name.size() > ext.size() && name.ends_with(ext)) {
      name.resize(name.size() - ext.size());
      break;
    }
  }
  return name;
}

// The file a window's session writes first: its tree, or its trace when it keeps only a trace.
std::string primary_path(const SessionConfig& config, const std::string& name) {
  return name + (parse_data(config.data).tree ? ".hatchet" : ".chrome_trace");
}

bool any_output_exists(const std::string& name) {
  std::error_code ec;
  for (std::string_view ext : kExtensions) {
    // A profile that advanced phases (a phased schedule) writes name.part_<p> files.
    if (std::filesystem::exists(name + std::string(ext), ec) ||
        std::filesystem::exists(name + ".part_0" + std::string(ext), ec))
      return true;
  }
  return false;
}

// The file phase `phase` of a profile whose first file is `path` is written to, as the session
// names it once it has advanced phases (a trace is one file whatever the phases).
std::string phase_path(const std::string& path, uint32_t phase) {
  constexpr std::string_view kTree = ".hatchet";
  if (phase == 0 || !path.ends_with(kTree)) return path;
  return path.substr(0, path.size() - kTree.size()) + ".part_" + std::to_string(phase) +
         std::string(kTree);
}

}  // namespace

WindowController& WindowController::get() {
  static WindowController* controller = new WindowController();  // leaked: used at exit
  return *controller;
}

void WindowController::configure(const SessionConfig& base, uint64_t flush_ms) {
  (void)make_session_options(base, read_environment());  // refuses what start() would refuse
  if (flush_ms > 0 && !parse_data(base.data).tree) {
    throw std::invalid_argument("a flush period needs windows that keep a call tree (data='" +
                                base.data +
                                "' keeps a trace only; use data='tree,trace' to flush the tree)");
  }
  std::lock_guard lock(mu_);
  base_ = base;
  base_->name = strip_extension(base_->name);
  flush_ms_ = flush_ms;
}

uint64_t WindowController::flush_ms() const {
  std::lock_guard lock(mu_);
  return flush_ms_;
}

uint64_t WindowController::flushes() const {
  return flushes_.load(std::memory_order_relaxed);
}

void WindowController::start_flusher_locked(SessionId id) {
  if (flush_ms_ == 0) return;
  flusher_state_ = std::make_unique<Flusher>();
  Flusher* f = flusher_state_.get();
  const auto period = std::chrono::milliseconds(flush_ms_);
  flusher_ = std::thread([this, f, id, period] {
    bool failing = false;
    std::unique_lock lock(f->mu);
    while (!f->wake.wait_for(lock, period, [f] { return f->stop; })) {
      lock.unlock();
      try {
        // A schedule's warm-up steps are thrown away when its first kept step begins: never
        // on disk as if they were the window's.
        if (!warming_up_.load(std::memory_order_acquire) && Runtime::get().checkpoint(id)) {
          flushes_.fetch_add(1, std::memory_order_relaxed);
          failing = false;
        }
      } catch (const SessionNotFound&) {
        return;  // finalized from elsewhere (proton.finalize(id) of the window's session)
      } catch (const std::exception& e) {
        // A full disk or a removed folder: one line when flushing starts to fail, and the
        // window keeps recording (its close tries again and reports).
        if (!failing)
          std::fprintf(stderr, "proton: could not flush the open window: %s\n", e.what());
        failing = true;
      }
      lock.lock();
    }
  });
}

void WindowController::stop_flusher_locked() {
  if (!flusher_.joinable()) return;
  if (owner_pid_ != ::getpid()) {
    // A fork child: the thread is the parent's (it does not exist here); forget it unjoined.
    (void)new std::thread(std::move(flusher_));
    (void)flusher_state_.release();
    return;
  }
  {
    std::lock_guard lock(flusher_state_->mu);
    flusher_state_->stop = true;
  }
  flusher_state_->wake.notify_one();
  flusher_.join();
  flusher_state_.reset();
}

bool WindowController::configured() const {
  std::lock_guard lock(mu_);
  return base_.has_value();
}

std::string WindowController::unique_name_locked(const std::string& base) {
  // Numbers count up in this process; a number whose file exists (an earlier run) is skipped.
  for (;;) {
    std::string name = base + ".w" + std::to_string(next_index_);
    if (!any_output_exists(name)) return name;
    ++next_index_;
  }
}

WindowResult WindowController::open_locked(const std::string& name, int64_t first_step,
                                           int64_t last_step) {
  if (!base_) throw std::logic_error("no window options: start Proton idle first");
  if (session_) throw std::logic_error("a window is already open (" + open_.path + ")");
  SessionConfig config = *base_;
  const std::string base = name.empty() ? base_->name : strip_extension(name);
  config.name = unique_name_locked(base);
  config.window = static_cast<int64_t>(next_index_);
  config.window_first_step = first_step;
  config.window_last_step = last_step;
  session_ = Runtime::get().start(config);
  owner_pid_ = ::getpid();
  open_ = {primary_path(config, config.name), next_index_};
  ++next_index_;
  start_flusher_locked(*session_);
  return open_;
}

WindowResult WindowController::close_locked() {
  if (!session_ && !paused_) throw std::logic_error("no window is open");
  stop_flusher_locked();  // before the final write, so no flush lands after it
  warming_up_.store(false, std::memory_order_release);
  const SessionId id = session_ ? *session_ : *paused_;
  const uint32_t last_phase = phase_;
  session_.reset();  // a failed write still ends the window: the next one can open
  paused_.reset();
  phase_ = 0;
  try {
    Runtime::get().finalize(id, "");
  } catch (const SessionNotFound&) {
    // proton.finalize() of every session already wrote it.
  }
  ++written_;
  return {phase_path(open_.path, last_phase), open_.index};
}

void WindowController::pause_locked() {
  stop_flusher_locked();  // a paused profile records nothing to flush
  warming_up_.store(false, std::memory_order_release);
  const SessionId id = *session_;
  session_.reset();
  try {
    // Everything the window launched reaches its phase before the next phase begins.
    Runtime::get().deactivate(id, /*flush=*/true);
    paused_ = id;
  } catch (const SessionNotFound&) {
    phase_ = 0;  // finalized from elsewhere: the next window starts a profile of its own
  }
}

void WindowController::resume_locked(int64_t first_step, int64_t last_step) {
  Runtime& rt = Runtime::get();
  const SessionId id = *paused_;
  paused_.reset();
  try {
    const uint32_t phase = rt.advance_phase(id);
    rt.set_phase_window(id, phase, phase, first_step, last_step);
    rt.activate(id);
    phase_ = phase;
  } catch (const SessionNotFound&) {  // finalized from elsewhere while paused
    phase_ = 0;
    open_locked("", first_step, last_step);
    rt.set_phase_window(*session_, 0, 0, first_step, last_step);
    return;
  }
  session_ = id;
  start_flusher_locked(id);
}

WindowResult WindowController::open(const std::string& name, int64_t first_step,
                                    int64_t last_step) {
  std::lock_guard lock(mu_);
  return open_locked(name, first_step, last_step);
}

WindowResult WindowController::close() {
  std::lock_guard lock(mu_);
  if (!session_) throw std::logic_error("no window is open");  // a paused schedule's is its own
  return close_locked();
}

void WindowController::discard_so_far() {
  std::lock_guard lock(mu_);
  discard_locked();
}

void WindowController::discard_locked() {
  if (!session_) return;
  Runtime& rt = Runtime::get();
  // Everything launched so far reaches the session first, so none of it lands after the clear.
  rt.deactivate(*session_, /*flush=*/true);
  rt.clear_phase(*session_, phase_, /*clear_up_to_phase=*/false);
  rt.activate(*session_);
}

std::optional<WindowResult> WindowController::close_if_open() noexcept {
  std::lock_guard lock(mu_);
  schedule_.reset();
  if (!session_ && !paused_) return std::nullopt;
  if (owner_pid_ != ::getpid()) {  // a fork child: the window is its parent's to write
    stop_flusher_locked();
    session_.reset();
    paused_.reset();
    return std::nullopt;
  }
  try {
    return close_locked();
  } catch (...) {
    return std::nullopt;
  }
}

bool WindowController::is_open() const {
  std::lock_guard lock(mu_);
  return session_.has_value();
}

std::string WindowController::open_path() const {
  std::lock_guard lock(mu_);
  return session_ ? open_.path : std::string();
}

uint64_t WindowController::windows_written() const {
  std::lock_guard lock(mu_);
  return written_;
}

std::optional<WindowResult> WindowController::apply_locked(const StepActions& a) {
  std::optional<WindowResult> written;
  if (a.close && session_) {
    // A phased schedule writes its profile when its last window ends (step_ > 0 here: the step
    // before this one recorded).
    const bool last =
        schedule_->repeat != 0 && step_state(*schedule_, step_ - 1).cycle + 1 >= schedule_->repeat;
    if (schedule_->phases && !last) {
      pause_locked();
    } else {
      written = close_locked();
    }
  }
  if (a.open) {
    warming_up_.store(step_state(*schedule_, step_).phase == StepPhase::kWarmup,
                      std::memory_order_release);
    const auto first = static_cast<int64_t>(a.first_step);
    const auto last = static_cast<int64_t>(a.last_step);
    if (paused_) {
      resume_locked(first, last);
    } else {
      open_locked("", first, last);
      phase_ = 0;
      if (schedule_->phases) Runtime::get().set_phase_window(*session_, 0, 0, first, last);
    }
  }
  if (a.discard_warmup) {
    discard_locked();
    warming_up_.store(false, std::memory_order_release);  // after the discard: flushes resume
  }
  return written;
}

void WindowController::set_schedule(const ScheduleSpec& spec) {
  if (std::string why = check_schedule(spec); !why.empty()) {
    throw std::invalid_argument("proton.schedule: " + why);
  }
  std::lock_guard lock(mu_);
  if (!base_) throw std::logic_error("no window options: configure before the schedule");
  if (session_) throw std::logic_error("a window is already open (" + open_.path + ")");
  if (paused_) close_locked();  // an earlier phased schedule's profile is written first
  schedule_ = spec;
  step_ = 0;
  apply_locked(actions_entering(spec, 0));
}

void WindowController::clear_schedule() {
  std::lock_guard lock(mu_);
  if (!schedule_) return;
  schedule_.reset();
  if (session_ || paused_) close_locked();
}

std::optional<WindowResult> WindowController::step() {
  std::lock_guard lock(mu_);
  ++step_;
  if (!schedule_) return std::nullopt;
  return apply_locked(actions_entering(*schedule_, step_));
}

uint64_t WindowController::current_step() const {
  std::lock_guard lock(mu_);
  return step_;
}

void WindowController::reset_for_testing() {
  close_if_open();
  std::lock_guard lock(mu_);
  base_.reset();
  flush_ms_ = 0;
  next_index_ = 0;
  written_ = 0;
  step_ = 0;
}

}  // namespace proton::control
