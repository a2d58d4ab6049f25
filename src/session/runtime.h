// The process-wide profiler: sessions over one backend.
//
// Lock order (outer first): api_mu_ -> RecordProcessor::mu_ -> sessions_mu_ -> Session::mu.
// api_mu_ serialises the user-facing calls (start/activate/deactivate/finalize), which may
// flush the backend; flushing delivers records through deliver(), which only takes
// sessions_mu_ (shared) and the session's own mutex.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/record_processor.h"
#include "session/session.h"

namespace proton {

class Runtime final : public RecordSink {
 public:
  static Runtime& get();

  /// Starts a session (or reactivates the one already writing to the same path) and
  /// returns its id. Throws std::invalid_argument for bad options or an unwritable path.
  SessionId start(const SessionConfig& config);
  void activate(SessionId id);
  void activate_all();
  void deactivate(SessionId id, bool flush);
  void deactivate_all(bool flush);
  /// Flushes, writes the output in `format` ("" = hatchet) and removes the session.
  /// Throws (keeping the session) when the format is unknown or the file cannot be written.
  void finalize(SessionId id, std::string_view format);
  void finalize_all(std::string_view format);

  /// Adds metrics to the current context of the calling thread in every active session.
  void add_metrics(std::span<const std::pair<NameId, MetricValue>> metrics);

  /// The session's tree as Hatchet JSON (flushes first).
  std::string hatchet_json(SessionId id);

  bool is_active(SessionId id) const;
  bool has_sessions() const;
  std::string backend_name() const;

  /// Injects a backend (tests); replaces any running one.
  void set_backend_for_testing(std::unique_ptr<Backend> backend);
  RecordProcessor& processor() { return processor_; }

  // RecordSink
  void deliver(SessionMask sessions, const LaunchTag& tag, const KernelRecord& r) override;
  void dropped(uint64_t count) override;

 private:
  Runtime();
  Session& session_or_throw(SessionId id);           // requires api_mu_
  void set_active(SessionId id, bool on);            // requires api_mu_
  void ensure_backend(const SessionConfig& config);  // requires api_mu_
  void flush_backend();                              // requires api_mu_
  void write_output(Session& s, std::string_view format);
  std::vector<DeviceInfo> devices_of(Session& s);

  std::mutex api_mu_;
  mutable std::shared_mutex sessions_mu_;  // guards sessions_ (the pointers, not the sessions)
  std::array<std::unique_ptr<Session>, kMaxSessions> sessions_;

  // Backend state, guarded by api_mu_.
  std::unique_ptr<Backend> backend_;
  bool backend_tried_ = false;
  bool backend_running_ = false;
  bool warned_no_backend_ = false;
  RecordProcessor processor_{*this};
};

}  // namespace proton
