// The session layer's output: each session's tree encoded and written when it is finalized or a
// phase of it completes (periodic flushing), the data API's reads of a tree, and the phases
// themselves. The rest of the Runtime is runtime.cpp (sessions, backend) and
// runtime_delivery.cpp (what the record processor and the instrumentation runtime hand over).
#include <stdexcept>

#include "common/clock.h"
#include "io/atomic_file.h"
#include "io/hatchet_writer.h"
#include "session/runtime.h"

namespace proton {

std::vector<DeviceInfo> Runtime::devices_of(const uint64_t (&seen)[2]) {
  std::vector<DeviceInfo> out;
  for (DeviceType type : {DeviceType::kCuda, DeviceType::kHip}) {
    for (uint64_t m = seen[static_cast<int>(type)]; m != 0; m &= m - 1) {
      auto id = static_cast<uint32_t>(std::countr_zero(m));
      DeviceInfo d = backend_ ? backend_->device(id) : DeviceInfo{};
      d.type = type;
      d.id = id;
      out.push_back(std::move(d));
    }
  }
  return out;
}

std::string Runtime::encode_tree(Session& s, uint32_t phase, bool msgpack) {
  // The device map asks the backend: do that without holding s.mu, then encode under it
  // (api_mu_ keeps clear() and advance_phase() out meanwhile).
  uint64_t seen[2] = {0, 0};
  {
    std::lock_guard lock(s.mu);
    if (const CallTree* tree = s.phase_tree(phase)) {
      seen[0] = tree->devices_seen(DeviceType::kCuda);
      seen[1] = tree->devices_seen(DeviceType::kHip);
    }
  }
  std::vector<DeviceInfo> devices = devices_of(seen);
  std::lock_guard lock(s.mu);
  s.settle_pc_samples();  // mode="pcsampling": every waiting sample onto the tree
  s.settle_comm();        // collectives still waiting for compute records: decided now
  CallTree empty;
  const CallTree* tree = s.phase_tree(phase);
  if (tree == nullptr) tree = &empty;  // cleared or already written: an empty profile
  const SessionConfig& c = s.config();
  CollectionStats stats{s.dropped_records, s.unattributed_kernels, c.window, c.window_first_step,
                        c.window_last_step};
  if (auto it = s.phase_windows.find(phase); it != s.phase_windows.end()) {
    stats.window = it->second.window;
    stats.window_first_step = it->second.first_step;
    stats.window_last_step = it->second.last_step;
  }
  return msgpack ? proton::hatchet_msgpack(*tree, devices, stats)
                 : proton::hatchet_json(*tree, devices, stats);
}

void Runtime::write_tree(Session& s, uint32_t phase, const std::string& format,
                         const std::string& path) {
  write_file_atomically(path, encode_tree(s, phase, format == "hatchet_msgpack"));
}

void Runtime::write_output(Session& s, const std::vector<std::string>& formats) {
  for (const std::string& format : formats) {
    if (format == "chrome_trace") {
      std::lock_guard lock(s.mu);
      s.finish_trace(steady_ns());
      continue;
    }
    write_trees(s, format);
  }
}

void Runtime::write_trees(Session& s, const std::string& format) {
  std::vector<uint32_t> phases;
  uint32_t current;
  {
    std::lock_guard lock(s.mu);
    phases = s.live_phases();
    current = s.current_phase();
  }
  // As triton.profiler: one file while the session never advanced, else one per phase.
  for (uint32_t phase : phases) {
    write_tree(s, phase, format, s.output_path(format, current == 0 ? -1 : int64_t{phase}));
  }
}

bool Runtime::checkpoint(SessionId id) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  if (!s.data().tree) return false;
  flush_backend();  // what the GPU finished so far reaches the tree first
  const PeriodicFlushing& p = s.periodic_flushing();
  write_trees(s, p.enabled && p.format != "chrome_trace" ? p.format : "hatchet");
  return true;
}

std::string Runtime::tree_data(SessionId id, uint32_t phase, bool msgpack) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  if (!s.data().tree) {
    throw std::invalid_argument("session " + std::to_string(id) + " records data='" +
                                s.config().data +
                                "' only: it has no call tree (start it with data='tree,trace')");
  }
  flush_backend();
  {
    std::lock_guard lock(s.mu);
    if (phase > s.current_phase()) {
      throw std::invalid_argument("phase " + std::to_string(phase) + " of session " +
                                  std::to_string(id) + " has not begun (current phase is " +
                                  std::to_string(s.current_phase()) + ")");
    }
  }
  return encode_tree(s, phase, msgpack);
}

std::string Runtime::hatchet_json(SessionId id, uint32_t phase) {
  return tree_data(id, phase, false);
}

std::string Runtime::hatchet_msgpack(SessionId id, uint32_t phase) {
  return tree_data(id, phase, true);
}

uint32_t Runtime::advance_phase(SessionId id) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  uint32_t phase = 0;
  processor_.advance_epoch([&](uint32_t epoch) {
    std::lock_guard lock(s.mu);
    phase = s.begin_phase(epoch);
  });
  if (s.periodic_flushing().enabled) flush_completed_phases(s);
  return phase;
}

bool Runtime::phase_complete(Session& s, uint32_t phase) {
  uint32_t oldest_open = processor_.oldest_open_epoch();
  std::lock_guard lock(s.mu);
  return phase < s.current_phase() && oldest_open >= s.phase_start(phase + 1);
}

bool Runtime::is_phase_complete(SessionId id, uint32_t phase) {
  std::lock_guard api(api_mu_);
  return phase_complete(session_or_throw(id), phase);
}

void Runtime::flush_completed_phases(Session& s) {
  std::vector<uint32_t> phases;
  {
    std::lock_guard lock(s.mu);
    phases = s.live_phases();
  }
  const std::string& format = s.periodic_flushing().format;
  if (format == "chrome_trace") {  // one trace per phase; the trees stay for finalize
    std::vector<uint32_t> closed;
    {
      std::lock_guard lock(s.mu);
      closed = s.phase_traces().held();
    }
    for (uint32_t phase : closed) {
      if (!phase_complete(s, phase)) break;  // phases complete in order
      std::lock_guard lock(s.mu);
      s.finish_phase_trace(phase, steady_ns());
    }
    return;
  }
  for (uint32_t phase : phases) {
    if (!phase_complete(s, phase)) break;  // phases complete in order
    write_tree(s, phase, format, s.output_path(format, phase));
    std::lock_guard lock(s.mu);
    s.clear_phases(phase, false);
  }
}

void Runtime::set_phase_window(SessionId id, uint32_t phase, int64_t window, int64_t first_step,
                               int64_t last_step) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  std::lock_guard lock(s.mu);
  s.phase_windows[phase] = {window, first_step, last_step};
}

void Runtime::clear_phase(SessionId id, uint32_t phase, bool clear_up_to_phase) {
  std::lock_guard api(api_mu_);
  Session& s = session_or_throw(id);
  std::lock_guard lock(s.mu);
  s.clear_phases(phase, clear_up_to_phase);
}

}  // namespace proton
