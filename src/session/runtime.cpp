#include "session/runtime.h"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "attribution/launch_stage.h"
#include "backends/instrumentation/instr_runtime.h"
#include "common/clock.h"
#include "context/launch_ops.h"
#include "context/scope_metric_sets.h"
#include "context/thread_context.h"
#include "io/atomic_file.h"
#include "io/chrome_trace_writer.h"
#include "io/run_info.h"
#include "session/region_sink.h"

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

// The files finalize(output_format) writes for `s`: "" means the session's natural outputs.
// Throws std::invalid_argument (before anything is flushed or written) for an unknown format
// or one the session has no data for.
std::vector<std::string> resolve_formats(const Session& s, std::string_view format) {
  std::vector<std::string> out;
  if (format.empty()) {
    if (s.data().tree) {
      const PeriodicFlushing& p = s.periodic_flushing();
      out.push_back(p.enabled && p.format != "chrome_trace" ? p.format : "hatchet");
    }
    if (s.data().trace) out.emplace_back("chrome_trace");
    return out;
  }
  size_t begin = 0;
  while (begin <= format.size()) {
    size_t end = std::min(format.find(',', begin), format.size());
    std::string f(format.substr(begin, end - begin));
    begin = end + 1;
    check_option("output format", f, {"hatchet", "hatchet_msgpack", "chrome_trace"});
    bool is_tree = f != "chrome_trace";
    if (is_tree && !s.data().tree) {
      throw std::invalid_argument("output format '" + f + "' writes a call tree, but session '" +
                                  s.config().name + "' was started with data='" + s.config().data +
                                  "' (start it with data='tree,trace' to get both)");
    }
    if (!is_tree && !s.data().trace) {
      throw std::invalid_argument("output format 'chrome_trace' writes a timeline, but session '" +
                                  s.config().name + "' was started with data='" + s.config().data +
                                  "' (start it with data='trace' or "
                                  "data='tree,trace')");
    }
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  return out;
}

// Whether two instrumentation modes give Triton's passes the same options (optimizations left
// out are the default set).
bool same_passes(InstrumentationMode a, InstrumentationMode b) {
  a.optimizations = optimizations_or_default(a);
  b.optimizations = optimizations_or_default(b);
  return a == b;
}

std::string mode_text(const std::string& mode) {
  return mode.empty() ? "default" : mode;
}

// The sessions' end of the instrumentation runtime (one per process, as the runtime).
instr::SessionRegionSink& region_sink() {
  static instr::SessionRegionSink sink;
  return sink;
}

}  // namespace

Runtime& Runtime::get() {
  static Runtime* runtime = new Runtime();  // leaked: CUPTI may call back during exit
  return *runtime;
}

Runtime::Runtime() = default;

SessionId Runtime::start(const SessionConfig& config) {
  // Every argument, knob and PROTON_* variable is checked here, before any state changes.
  SessionOptions options = make_session_options(config, read_environment());
  options.backend.local_rank = static_cast<int>(run_info().local_rank);
  // Copies: `options` moves into the session below.
  const instr::InstrOptions instr_options = options.instr;
  const BackendOptions backend_options = options.backend;
  const PcSamplingOptions pc_sampling =
      options.pc_sampling() != nullptr ? *options.pc_sampling() : PcSamplingOptions{};
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s && s->config().name == config.name) {
      set_active(s->id(), true);
      return public_ids_[s->id()];
    }
  }
  // CUPTI's activity kinds are process-wide, so sessions that run together must agree on them:
  // mode="graph" swaps per-node kernel records for one record per graph launch.
  const auto* instr_mode = std::get_if<InstrumentationMode>(&options.mode);
  for (auto& s : sessions_) {
    if (!s) continue;
    // Triton compiles a kernel once for every instrumentation session of the process.
    const auto* running = std::get_if<InstrumentationMode>(&s->options().mode);
    if (instr_mode != nullptr && running != nullptr && !same_passes(*instr_mode, *running)) {
      throw std::invalid_argument("instrumentation mode '" + mode_text(config.mode) +
                                  "' differs from the running session's '" +
                                  mode_text(s->config().mode) + "'; finalize it first");
    }
    if (s->options().graph() != options.graph()) {
      throw std::invalid_argument(
          "mode='graph' records one node per CUDA graph launch for the whole process; session '" +
          s->config().name + "' runs with mode='" + s->config().mode +
          "': finalize it first, or start both with the same mode");
    }
  }
  // The backend's counter setup is process-wide: a counters session must start it.
  if (backend_options.counters.enabled && backend_running_ &&
      backend_counters_ != backend_options.counters.canonical()) {
    throw std::invalid_argument("mode='" + config.mode +
                                "': hardware counters are set up when the GPU backend starts, "
                                "and it is already running " +
                                (backend_counters_.empty() ? std::string("without counters")
                                                           : "with '" + backend_counters_ + "'") +
                                ": finalize the other sessions first, or start this one first");
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
  auto session = std::make_unique<Session>(
      id, std::move(options), LaunchStage::phase_epoch.load(std::memory_order_relaxed));
  if (std::string why = check_writable(session->output_path("hatchet")); !why.empty()) {
    throw std::invalid_argument("cannot write the profile of session '" + config.name +
                                "': " + why);
  }
  // Kernel records are process-wide too, but sessions need not agree: a session timing kernels
  // turns them on beside instrumentation sessions that keep region cycles only, which then
  // leave the records they are handed alone (Session::add_kernel); off again when the last
  // session timing kernels is finalized (finalize). Last of the checks: a session refused
  // above leaves them as they were.
  if (backend_running_ && backend_options.kernel_records && !backend_kernel_records_) {
    std::string why;
    if (!backend_->enable_kernel_records(why)) {
      throw std::runtime_error("session '" + config.name +
                               "' cannot time kernels beside the sessions keeping region cycles "
                               "only: " +
                               why);
    }
    backend_kernel_records_ = true;
  }
  {
    std::unique_lock lock(sessions_mu_);
    sessions_[id] = std::move(session);
    public_ids_[id] = next_public_id_++;
  }
  bool had_backend = backend_running_;
  ensure_backend(config, backend_options);
  if (!had_backend && backend_running_) {
    backend_kernel_records_ = backend_options.kernel_records;
    backend_counters_ = backend_options.counters.canonical();
    if (std::string why = backend_->counters_problem(); !why.empty()) {
      backend_counters_.clear();
      if (backend_->counters_user_error()) {
        // The user's to fix (a metric name, replay): refuse the session, leave no trace of it.
        {
          std::unique_lock lock(sessions_mu_);
          sessions_[id].reset();
        }
        backend_->stop();
        backend_running_ = false;
        processor_.settle(/*forget_open_tags=*/true);
        throw std::invalid_argument("mode='" + config.mode + "': " + why);
      }
      std::fprintf(stderr, "proton: hardware counters are off (%s); kernel timing goes on\n",
                   why.c_str());
    }
  }
  if (backend_options.counters.enabled && !backend_counters_.empty()) {
    sessions_[id]->enable_counters(backend_options.counters.range_profiler,
                                   backend_options.counters.pm_sampling);
  }
  if (pc_sampling.enabled) start_pc_sampling(pc_sampling);
  if (sessions_[id]->data().trace) start_trace(*sessions_[id]);
  if (sessions_[id]->options().python_context) {
    LaunchStage::python_sessions.fetch_or(SessionMask{1} << id);
  }
  set_active(id, true);
  if (instr_mode != nullptr) {
    // Only a started instrumentation session sets the runtime's options: a refused one, or a
    // session of another mode, leaves those of the running ones alone.
    instr::InstrRuntime::configure(instr_options);
    open_regions(id);
  }
  return public_ids_[id];
}

void Runtime::open_regions(SessionId slot) {
  // Regions reach the sessions of a launch's slot mask: the public id is not the slot once a
  // process has started more sessions than it has slots.
  instr::InstrRuntime& regions = instr::InstrRuntime::get();
  regions.set_sink(&region_sink());
  regions.open(public_ids_[slot], /*pool_bytes=*/0, SessionMask{1} << slot);
}

void Runtime::add_host_regions(const instr::KernelInfo& kernel, const instr::DecodeResult& decoded,
                               uint32_t clock_khz) {
  region_sink().deliver(LaunchStage::active_sessions.load(std::memory_order_relaxed),
                        ThreadContext::launch_context(), kernel, decoded, 0, clock_khz);
}

void Runtime::start_trace(Session& s) {
  // Align the backend's kernel clock with the steady clock: take the closest of a few
  // (steady, backend, steady) samples; the offset error is at most half that window.
  int64_t offset = 0;
  uint64_t best = UINT64_MAX;
  for (int i = 0; backend_running_ && i < 5; ++i) {
    uint64_t before = steady_ns();
    uint64_t gpu = backend_->timestamp_ns();
    uint64_t after = steady_ns();
    if (after - before < best) {
      best = after - before;
      offset = static_cast<int64_t>(gpu) - static_cast<int64_t>(before + (after - before) / 2);
    }
  }
  TraceClock clock;
  clock.base_steady_ns = steady_ns();
  clock.base_wall_ns = wall_ns();
  clock.gpu_offset_ns = offset;
  {
    std::lock_guard lock(s.mu);
    s.start_trace(clock, offset, backend_running_ && s.config().kernel_records);
  }
  LaunchStage::trace_sessions.fetch_or(SessionMask{1} << s.id());
  // Installed once and left: LaunchStage::scope_event does nothing without an active trace.
  ThreadContext::scope_observer.store(&LaunchStage::scope_event, std::memory_order_release);
}

void Runtime::ensure_backend(const SessionConfig& config, const BackendOptions& options) {
  if (backend_running_) return;
  std::string why;
  if (!backend_) backend_ = make_backend(config.backend, why);
  if (backend_ && !backend_->start(&processor_, options, why)) backend_.reset();
  backend_running_ = backend_ != nullptr;
  if (!backend_running_ && !warned_no_backend_) {
    warned_no_backend_ = true;
    std::fprintf(stderr,
                 "proton: no GPU backend is active (%s); recording CPU-side scopes and metrics "
                 "only\n",
                 why.c_str());
  }
}

SessionId Runtime::slot_or_throw(SessionId id) const {
  for (SessionId slot = 0; slot < kMaxSessions; ++slot) {
    if (sessions_[slot] && public_ids_[slot] == id) return slot;
  }
  throw SessionNotFound(id);
}

Session& Runtime::session_or_throw(SessionId id) {
  return *sessions_[slot_or_throw(id)];
}

SessionNotFound::SessionNotFound(SessionId id)
    : std::runtime_error("Session has not been initialized: " + std::to_string(id)) {}

void Runtime::set_active(SessionId id, bool on) {
  SessionMask before = LaunchStage::active_sessions.load();
  SessionMask bit = SessionMask{1} << id;
  SessionMask after = on ? (before | bit) : (before & ~bit);
  LaunchStage::active_sessions.store(after, std::memory_order_release);
  LaunchStage::trace_active.store((after & LaunchStage::trace_sessions.load()) != 0,
                                  std::memory_order_release);
  if (!backend_running_) return;
  // The pause spans from before the callbacks go to after they are back: every launch they did
  // not tag started inside it.
  if (before == 0 && after != 0) {
    backend_->resume();
    processor_.resumed(backend_->timestamp_ns());
  }
  if (before != 0 && after == 0) {
    processor_.paused(backend_->timestamp_ns());
    backend_->pause();
  }
}

void Runtime::activate(SessionId id) {
  std::lock_guard api(api_mu_);
  set_active(slot_or_throw(id), true);
}

void Runtime::activate_all(bool windows) {
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s && (windows || s->config().window < 0)) set_active(s->id(), true);
  }
}

void Runtime::deactivate(SessionId id, bool flush) {
  std::lock_guard api(api_mu_);
  set_active(slot_or_throw(id), false);
  if (flush) flush_backend();
}

void Runtime::deactivate_all(bool flush, bool windows) {
  std::lock_guard api(api_mu_);
  for (auto& s : sessions_) {
    if (s && (windows || s->config().window < 0)) set_active(s->id(), false);
  }
  if (flush) flush_backend();
}

void Runtime::flush_backend() {
  if (backend_running_) backend_->flush();
  processor_.settle();
  if (!backend_counters_.empty()) {
    std::shared_lock lock(sessions_mu_);
    for (auto& s : sessions_) {
      if (s && s->counters_enabled()) s->settle_counters();
    }
  }
}

void Runtime::finalize(SessionId public_id, std::string_view format) {
  std::lock_guard api(api_mu_);
  SessionId id = slot_or_throw(public_id);
  Session& s = *sessions_[id];
  std::vector<std::string> formats = resolve_formats(s, format);  // throws before any change
  if (s.instrumented()) {
    // Every launch queued so far is decoded into the session's tree, then its pool is freed.
    instr::InstrRuntime::get().close(public_id);
  }
  set_active(id, false);
  flush_backend();
  if (s.pc_sampling() && backend_running_) {
    // The last PC-sampling session: stop sampling now, so that what CUPTI hands over only when
    // it is disabled still reaches this profile.
    bool others = false;
    for (auto& o : sessions_)
      others = others || (o && o.get() != &s && o->pc_sampling());
    if (!others) backend_->stop_pc_sampling();
  }
  write_output(s, formats);  // throws, keeping the session, when a file cannot be written
  LaunchStage::trace_sessions.fetch_and(~(SessionMask{1} << id));
  LaunchStage::python_sessions.fetch_and(~(SessionMask{1} << id));
  {
    std::unique_lock lock(sessions_mu_);
    sessions_[id].reset();
  }
  processor_.forget_session(id);  // its slot may be reused: no old launch may reach the new one
  bool any = false, records_wanted = false;
  for (auto& other : sessions_) {
    any = any || other != nullptr;
    records_wanted = records_wanted || (other && other->config().kernel_records);
  }
  if (any && backend_running_ && backend_kernel_records_ && !records_wanted) {
    // The last session timing kernels beside instrumentation sessions that keep region cycles
    // only: their launches go back to costing no kernel record.
    backend_->disable_kernel_records();
    backend_kernel_records_ = false;
    processor_.settle();
  }
  if (!any && backend_running_) {
    backend_->stop();
    backend_running_ = false;
    backend_counters_.clear();
    processor_.settle(/*forget_open_tags=*/true);
  }
}

void Runtime::finalize_all(std::string_view format, bool windows) {
  for (SessionId slot = 0; slot < kMaxSessions; ++slot) {
    bool exists;
    SessionId id = 0;
    {
      std::shared_lock lock(sessions_mu_);
      exists = sessions_[slot] != nullptr && (windows || sessions_[slot]->config().window < 0);
      id = public_ids_[slot];
    }
    if (exists) finalize(id, format);
  }
}

ContextId Runtime::scope_python_site() {
  const ThreadContext& t = ThreadContext::current();
  ContextId site = t.open_scopes() != 0 ? t.scope_python_site() : kRootContext;
  return site != kRootContext ? site : LaunchStage::python_context();
}

void Runtime::add_metrics(std::span<const std::pair<NameId, MetricValue>> metrics) {
  // Where this thread's kernels land: the scope path, then the state as the leaf (as
  // triton.profiler places scope metrics inside `with proton.state(...)`).
  ContextId ctx = ThreadContext::launch_context();
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_acquire);
  if (active == 0) return;
  // context="python" sessions: the Python path where the innermost scope was entered.
  ContextId python = kRootContext;
  if ((active & LaunchStage::python_sessions.load(std::memory_order_relaxed)) != 0) {
    python = scope_python_site();
  }
  if (!metrics.empty() && LaunchStage::tracing()) {
    // A trace shows them on the scope's own event: staged in order with its enter and exit.
    ScopeMetricSets& sets = ScopeMetricSets::global();
    const uint32_t set = sets.add({metrics.begin(), metrics.end()});
    if (!LaunchStage::scope_metrics(ctx, set)) sets.release(set);
  }
  std::shared_lock lock(sessions_mu_);
  for (; active != 0; active &= active - 1) {
    if (Session* s = sessions_[std::countr_zero(active)].get()) {
      s->add_metrics(ctx, python, metrics);
    }
  }
}

bool Runtime::add_metrics_to(SessionId id, ContextId ctx, ContextId python,
                             std::span<const std::pair<NameId, MetricValue>> metrics) {
  std::shared_lock lock(sessions_mu_);
  for (SessionId slot = 0; slot < kMaxSessions; ++slot) {
    if (sessions_[slot] && public_ids_[slot] == id) {
      sessions_[slot]->add_metrics(ctx, python, metrics);
      return true;
    }
  }
  return false;
}

bool Runtime::add_device_slot_value(SessionId id, uint32_t slot, NameId metric,
                                    const MetricValue& value) {
  std::shared_lock lock(sessions_mu_);
  for (SessionId i = 0; i < kMaxSessions; ++i) {
    if (sessions_[i] && public_ids_[i] == id) {
      return sessions_[i]->add_device_slot_value(slot, metric, value);
    }
  }
  return false;
}

void Runtime::flush() {
  std::lock_guard api(api_mu_);
  flush_backend();
}

std::vector<SessionId> Runtime::active_session_ids() const {
  std::vector<SessionId> out;
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_acquire);
  if (active == 0) return out;
  std::shared_lock lock(sessions_mu_);
  for (; active != 0; active &= active - 1) {
    auto slot = static_cast<SessionId>(std::countr_zero(active));
    if (sessions_[slot]) out.push_back(public_ids_[slot]);
  }
  return out;
}

std::optional<std::string> Runtime::instrumentation_mode(SessionId id) const {
  std::shared_lock lock(sessions_mu_);
  SessionId slot = slot_or_throw(id);
  if (!sessions_[slot]->instrumented()) return std::nullopt;
  return sessions_[slot]->config().mode;
}

bool Runtime::is_active(SessionId id) const {
  std::shared_lock lock(sessions_mu_);
  for (SessionId slot = 0; slot < kMaxSessions; ++slot) {
    if (sessions_[slot] && public_ids_[slot] == id) {
      return (LaunchStage::active_sessions.load() >> slot) & 1;
    }
  }
  return false;
}

bool Runtime::is_python_session(SessionId id) const {
  std::shared_lock lock(sessions_mu_);
  for (SessionId slot = 0; slot < kMaxSessions; ++slot) {
    if (sessions_[slot] && public_ids_[slot] == id) {
      return sessions_[slot]->options().python_context;
    }
  }
  return false;
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

SessionId Runtime::slot_for_testing(SessionId id) {
  std::lock_guard api(api_mu_);
  return slot_or_throw(id);
}

void Runtime::set_backend_for_testing(std::unique_ptr<Backend> backend) {
  std::lock_guard api(api_mu_);
  if (backend_running_) backend_->stop();
  backend_ = std::move(backend);
  backend_running_ = false;
  if (backend_ && has_sessions()) {
    std::string why;
    backend_running_ =
        backend_->start(&processor_, make_session_options({}, read_environment()).backend, why);
  }
}

void Runtime::start_pc_sampling(const PcSamplingOptions& options) {
  if (!backend_running_) return;  // "no GPU backend" was said already
  std::string why;
  if (!backend_->start_pc_sampling(options, why)) {
    // One line, and the program runs on with kernel timing.
    std::fprintf(stderr, "proton: PC sampling is off (%s); recording kernel timing only\n",
                 why.c_str());
  }
}

}  // namespace proton
