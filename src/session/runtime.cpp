#include "session/runtime.h"

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "backend/launch_stage.h"
#include "context/thread_context.h"
#include "io/atomic_file.h"
#include "io/hatchet_writer.h"

namespace proton {

namespace {

void check_option(std::string_view what, const std::string& value,
                  std::initializer_list<std::string_view> allowed) {
  for (auto a : allowed) {
    if (value == a) return;
  }
  std::string list;
  for (auto a : allowed)
    list += (list.empty() ? "'" : ", '") + std::string(a) + "'";
  throw std::invalid_argument("unknown " + std::string(what) + " '" + value + "' (expected " +
                              list + ")");
}

BackendOptions options_from_env() {
  BackendOptions o;
  if (const char* s = std::getenv("PROTON_BUFFER_SIZE")) {
    char* end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (end != s && v >= 1024) o.buffer_bytes = static_cast<size_t>(v);
  }
  return o;
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime* runtime = new Runtime();  // leaked: CUPTI may call back during exit
  return *runtime;
}

Runtime::Runtime() = default;

SessionId Runtime::start(const SessionConfig& config) {
  check_option("context", config.context, {"shadow", "python"});
  check_option("data", config.data, {"tree"});
  check_option("mode", config.mode, {""});
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s && s->config().name == config.name) {
      set_active(s->id(), true);
      return s->id();
    }
  }
  SessionId id = kMaxSessions;
  for (SessionId i = 0; i < kMaxSessions; ++i) {
    if (!sessions_[i]) {
      id = i;
      break;
    }
  }
  if (id == kMaxSessions) {
    throw std::invalid_argument("too many profiling sessions (at most 64); finalize some first");
  }
  auto session = std::make_unique<Session>(id, config);
  if (std::string why = check_writable(session->output_path("hatchet")); !why.empty()) {
    throw std::invalid_argument("cannot write the profile of session '" + config.name +
                                "': " + why);
  }
  {
    std::unique_lock lock(sessions_mu_);
    sessions_[id] = std::move(session);
  }
  ensure_backend(config);
  set_active(id, true);
  return id;
}

void Runtime::ensure_backend(const SessionConfig& config) {
  if (backend_running_) return;
  std::string why;
  if (!backend_) backend_ = make_backend(config.backend, why);
  if (backend_ && !backend_->start(&processor_, options_from_env(), why)) backend_.reset();
  backend_running_ = backend_ != nullptr;
  if (!backend_running_ && !warned_no_backend_) {
    warned_no_backend_ = true;
    std::fprintf(stderr,
                 "proton: no GPU backend is active (%s); recording CPU-side scopes and metrics "
                 "only\n",
                 why.c_str());
  }
}

Session& Runtime::session_or_throw(SessionId id) {
  if (id >= kMaxSessions || !sessions_[id]) {
    throw std::invalid_argument("unknown profiling session " + std::to_string(id));
  }
  return *sessions_[id];
}

void Runtime::set_active(SessionId id, bool on) {
  SessionMask before = LaunchStage::active_sessions.load();
  SessionMask bit = SessionMask{1} << id;
  SessionMask after = on ? (before | bit) : (before & ~bit);
  LaunchStage::active_sessions.store(after, std::memory_order_release);
  if (!backend_running_) return;
  if (before == 0 && after != 0) backend_->resume();
  if (before != 0 && after == 0) backend_->pause();
}

void Runtime::activate(SessionId id) {
  std::lock_guard api(api_mu_);
  session_or_throw(id);
  set_active(id, true);
}

void Runtime::activate_all() {
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s) set_active(s->id(), true);
  }
}

void Runtime::deactivate(SessionId id, bool flush) {
  std::lock_guard api(api_mu_);
  session_or_throw(id);
  set_active(id, false);
  if (flush) flush_backend();
}

void Runtime::deactivate_all(bool flush) {
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s) set_active(s->id(), false);
  }
  if (flush) flush_backend();
}

void Runtime::flush_backend() {
  if (backend_running_) backend_->flush();
  processor_.settle();
}

void Runtime::finalize(SessionId id, std::string_view format) {
  check_option("output format", std::string(format), {"", "hatchet"});
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  set_active(id, false);
  flush_backend();
  write_output(s, format);  // throws, keeping the session, when the file cannot be written
  {
    std::unique_lock lock(sessions_mu_);
    sessions_[id].reset();
  }
  bool any = false;
  for (auto& other : sessions_)
    any = any || other != nullptr;
  if (!any && backend_running_) {
    backend_->stop();
    backend_running_ = false;
    processor_.settle(/*forget_open_tags=*/true);
  }
}

void Runtime::finalize_all(std::string_view format) {
  for (SessionId id = 0; id < kMaxSessions; ++id) {
    bool exists;
    {
      std::shared_lock lock(sessions_mu_);
      exists = sessions_[id] != nullptr;
    }
    if (exists) finalize(id, format);
  }
}

std::vector<DeviceInfo> Runtime::devices_of(Session& s) {
  std::vector<DeviceInfo> out;
  for (DeviceType type : {DeviceType::kCuda, DeviceType::kHip}) {
    uint64_t seen;
    {
      std::lock_guard lock(s.mu);
      seen = s.tree().devices_seen(type);
    }
    for (; seen != 0; seen &= seen - 1) {
      auto id = static_cast<uint32_t>(std::countr_zero(seen));
      DeviceInfo d = backend_ ? backend_->device(id) : DeviceInfo{};
      d.type = type;
      d.id = id;
      out.push_back(std::move(d));
    }
  }
  return out;
}

void Runtime::write_output(Session& s, std::string_view format) {
  std::vector<DeviceInfo> devices = devices_of(s);
  std::string text;
  {
    std::lock_guard lock(s.mu);
    text = proton::hatchet_json(s.tree(), devices, {s.dropped_records, s.unattributed_kernels});
  }
  write_file_atomically(s.output_path(format.empty() ? "hatchet" : format), text);
}

std::string Runtime::hatchet_json(SessionId id) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  flush_backend();
  std::vector<DeviceInfo> devices = devices_of(s);
  std::lock_guard lock(s.mu);
  return proton::hatchet_json(s.tree(), devices, {s.dropped_records, s.unattributed_kernels});
}

void Runtime::add_metrics(std::span<const std::pair<NameId, MetricValue>> metrics) {
  ContextId ctx = ThreadContext::metric_context();
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_acquire);
  std::shared_lock lock(sessions_mu_);
  for (; active != 0; active &= active - 1) {
    if (Session* s = sessions_[std::countr_zero(active)].get()) s->add_metrics(ctx, metrics);
  }
}

void Runtime::deliver(SessionMask sessions, const LaunchTag& tag, const KernelRecord& r) {
  std::shared_lock lock(sessions_mu_);
  for (; sessions != 0; sessions &= sessions - 1) {
    if (Session* s = sessions_[std::countr_zero(sessions)].get()) s->add_kernel(tag, r);
  }
}

void Runtime::dropped(uint64_t count) {
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_acquire);
  std::shared_lock lock(sessions_mu_);
  for (; active != 0; active &= active - 1) {
    Session* s = sessions_[std::countr_zero(active)].get();
    if (s == nullptr) continue;
    std::lock_guard session_lock(s->mu);
    s->dropped_records += count;
  }
}

bool Runtime::is_active(SessionId id) const {
  return id < kMaxSessions && (LaunchStage::active_sessions.load() >> id) & 1;
}

bool Runtime::has_sessions() const {
  std::shared_lock lock(sessions_mu_);
  for (auto& s : sessions_) {
    if (s) return true;
  }
  return false;
}

std::string Runtime::backend_name() const {
  return backend_running_ ? std::string(backend_->name()) : std::string();
}

void Runtime::set_backend_for_testing(std::unique_ptr<Backend> backend) {
  std::lock_guard api(api_mu_);
  if (backend_running_) backend_->stop();
  backend_ = std::move(backend);
  backend_running_ = false;
  if (backend_ && has_sessions()) {
    std::string why;
    backend_running_ = backend_->start(&processor_, options_from_env(), why);
  }
}

}  // namespace proton
