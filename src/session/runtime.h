// The process-wide profiler: sessions over one backend.
//
// Lock order (outer first): api_mu_ -> RecordProcessor::mu_ -> sessions_mu_ -> Session::mu.
// Phase changes take RecordProcessor::mu_ then Session::mu (see RecordProcessor::advance_epoch).
// api_mu_ serialises the user-facing calls (start/activate/deactivate/finalize), which may
// flush the backend; flushing delivers records through the record processor, which holds
// sessions_mu_ (shared) for each batch (begin_batch/end_batch), and deliver() then takes only
// the session's own mutex. So start/finalize wait at most one batch to change sessions_.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attribution/record_processor.h"
#include "backends/backend.h"
#include "session/session.h"

namespace proton {

namespace instr {
struct KernelInfo;
struct DecodeResult;
}  // namespace instr

/// An id that names no live session (never started, or finalized): triton.profiler raises
/// RuntimeError("Session has not been initialized: N") for it, and so do we.
class SessionNotFound : public std::runtime_error {
 public:
  explicit SessionNotFound(SessionId id);
};

class Runtime final : public RecordSink {
 public:
  static Runtime& get();

  /// Starts a session (or reactivates the one already writing to the same path) and
  /// returns its id. Throws std::invalid_argument for bad options or an unwritable path.
  /// Ids are handed out in order and never reused (a finalized session's id stays dead, as in
  /// triton.profiler); internally a session lives in one of kMaxSessions slots, whose index is
  /// its bit in the launch-time session masks. Every call taking an id throws SessionNotFound
  /// for an id that names no live session.
  SessionId start(const SessionConfig& config);
  void activate(SessionId id);
  /// activate() / deactivate() of every session; with windows=false, not the sessions of
  /// always-on windows, which their controller opens, pauses and closes (a program's
  /// proton.activate()/deactivate() with no id leaves a window as proton.finalize() does).
  void activate_all(bool windows = true);
  void deactivate(SessionId id, bool flush);
  void deactivate_all(bool flush, bool windows = true);
  /// Flushes, writes the output in `format` ("" = hatchet) and removes the session.
  /// Throws (keeping the session) when the format is unknown or the file cannot be written.
  void finalize(SessionId id, std::string_view format);
  /// finalize() of every session; with windows=false, not the sessions of always-on windows
  /// (config().window >= 0), which their controller writes (a program's proton.finalize()
  /// leaves a window opened from outside it recording).
  void finalize_all(std::string_view format, bool windows = true);
  /// Writes the session's call tree as it stands now to the files finalize() would write for
  /// it (atomically, replacing the previous ones) and keeps recording: a process killed later
  /// leaves at least this much. Returns false, writing nothing, for a session with no tree.
  bool checkpoint(SessionId id);

  /// Adds metrics to the current context of the calling thread in every active session.
  void add_metrics(std::span<const std::pair<NameId, MetricValue>> metrics);
  /// Adds metrics to `ctx` (`python` in a context="python" session, when not kRootContext) of
  /// one session, if it still exists (device tensor metrics, read back after the fact:
  /// python/proton/metric.py). Returns false when it does not.
  bool add_metrics_to(SessionId id, ContextId ctx, ContextId python,
                      std::span<const std::pair<NameId, MetricValue>> metrics);
  /// Adds `value` of `metric`, read back from device accumulator `slot` (launch_metadata
  /// tensors), to the kernel nodes of session `id` that the slot's launches reached. False when
  /// the session is gone or no such kernel reached it.
  bool add_device_slot_value(SessionId id, uint32_t slot, NameId metric, const MetricValue& value);
  /// Delivers every record the backend holds to the sessions (a read-back of device metrics
  /// needs the kernels it belongs to placed first).
  void flush();
  /// Where scope metrics of the calling thread go in a context="python" session: the Python
  /// path recorded when its innermost scope was entered, else the path it is at now.
  static ContextId scope_python_site();
  /// Ids of the sessions recording now, in slot order.
  std::vector<SessionId> active_session_ids() const;

  /// The tree of `phase` as Hatchet JSON / MessagePack (flushes first). A phase that was
  /// cleared or written out reads as an empty tree; a phase not begun yet is an error.
  std::string hatchet_json(SessionId id, uint32_t phase = 0);
  std::string hatchet_msgpack(SessionId id, uint32_t phase = 0);

  /// Phases (data.advance_phase / is_phase_complete / clear). advance_phase returns the new
  /// phase; with periodic flushing it then writes and frees every completed earlier phase.
  uint32_t advance_phase(SessionId id);
  /// True when every kernel launched during `phase` has been delivered (the phase is over and
  /// no launch stamped with its epochs is still waiting for records). Never blocks on the GPU.
  bool is_phase_complete(SessionId id, uint32_t phase);
  void clear_phase(SessionId id, uint32_t phase, bool clear_up_to_phase);
  /// An always-on window kept as `phase` of the session: its number and kept steps go on that
  /// phase's root (control/ windows as phases of one profile).
  void set_phase_window(SessionId id, uint32_t phase, int64_t window, int64_t first_step,
                        int64_t last_step);

  /// A record from a source outside the record processor (the instrumentation runtime's
  /// decoders hand LaunchRegions) for the sessions of `sessions` that still exist: takes
  /// sessions_mu_ (shared) and each session's mu.
  void deliver_outside_batch(SessionMask sessions, const Record& record);

  /// The mode text an instrumentation session (backend="instrumentation") was started with ("":
  /// the default mode), or nullopt for any other session: what Triton's compiler hooks
  /// install. Throws SessionNotFound.
  std::optional<std::string> instrumentation_mode(SessionId id) const;

  /// Regions of a kernel that recorded them itself, decoded on the host: added under the
  /// calling thread's context in every active session (the trace only with `clock_khz`).
  void add_host_regions(const instr::KernelInfo& kernel, const instr::DecodeResult& decoded,
                        uint32_t clock_khz);

  bool is_active(SessionId id) const;
  /// Whether session `id` exists and places kernels by Python call path (context="python").
  bool is_python_session(SessionId id) const;
  bool has_sessions() const;
  std::string backend_name() const;

  /// The internal slot (bit in the launch-time session masks) of a live session (tests).
  SessionId slot_for_testing(SessionId id);
  /// Injects a backend (tests); replaces any running one.
  void set_backend_for_testing(std::unique_ptr<Backend> backend);
  RecordProcessor& processor() { return processor_; }

  // RecordSink. The processor calls these between begin_batch() and end_batch(), which take
  // and release sessions_mu_ (shared): a shared lock per record cost ~8% of attribution.
  void begin_batch() override;
  void end_batch() override;
  void deliver(SessionMask sessions, const Record& record) override;

 private:
  Runtime();
  Session& session_or_throw(SessionId id);      // requires api_mu_
  SessionId slot_or_throw(SessionId id) const;  // requires api_mu_ or sessions_mu_
  void set_active(SessionId id, bool on);       // requires api_mu_
  // Requires api_mu_.
  void ensure_backend(const SessionConfig& config, const BackendOptions& options);
  void flush_backend();                                                    // requires api_mu_
  void write_output(Session& s, const std::vector<std::string>& formats);  // requires api_mu_
  void write_trees(Session& s, const std::string& format);                 // requires api_mu_
  void write_tree(Session& s, uint32_t phase, const std::string& format,
                  const std::string& path);                           // requires api_mu_
  std::string encode_tree(Session& s, uint32_t phase, bool msgpack);  // requires api_mu_
  void flush_completed_phases(Session& s);          // requires api_mu_ (periodic flushing)
  bool phase_complete(Session& s, uint32_t phase);  // requires api_mu_
  void start_trace(Session& s);                     // requires api_mu_
  // Opens the instrumentation runtime's pool of the session in `slot` (requires api_mu_);
  // finalize drains and closes it.
  void open_regions(SessionId slot);
  std::vector<DeviceInfo> devices_of(const uint64_t (&seen)[2]);  // requires api_mu_
  std::string tree_data(SessionId id, uint32_t phase, bool msgpack);

  // mode="pcsampling": starts the backend's PC sampling, or says in one line why not.
  void start_pc_sampling(const PcSamplingOptions& options);  // requires api_mu_

  std::mutex api_mu_;
  mutable std::shared_mutex sessions_mu_;  // guards sessions_ (the pointers, not the sessions)
  std::array<std::unique_ptr<Session>, kMaxSessions> sessions_;
  // The user-visible id of each slot's session; written with sessions_ (under api_mu_ and
  // sessions_mu_), so either lock reads it. next_public_id_ is guarded by api_mu_.
  std::array<SessionId, kMaxSessions> public_ids_{};
  SessionId next_public_id_ = 0;

  // Backend state, guarded by api_mu_.
  std::unique_ptr<Backend> backend_;
  bool backend_running_ = false;
  // Whether the running backend makes kernel records (BackendOptions::kernel_records).
  bool backend_kernel_records_ = false;
  bool warned_no_backend_ = false;
  RecordProcessor processor_{*this};
  // The counters config the running backend was started with ("" = none): sessions that run
  // together share the backend's one hardware-counter setup (guarded by api_mu_).
  std::string backend_counters_;
};

}  // namespace proton
