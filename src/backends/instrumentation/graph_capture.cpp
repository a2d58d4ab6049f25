// Instrumented launches captured into CUDA graphs. A captured kernel keeps the scratch address
// it was given and writes it at every replay of its graph, long after its launch returned, so
// it must not get a slice of the ring (every replay would write into whatever launch holds
// that slice by then) and its exit must not record an event on the capturing stream (our copy
// stream would join the capture). Instead:
//   - the allocator asks the driver whether the launch's stream is capturing (only for streams
//     other than the legacy default stream, which cannot capture) and gives a captured launch
//     device memory of its own, allocated in relaxed capture mode as PyTorch's allocator does,
//     so a global-mode capture stays valid;
//   - its exit notes which graph the capture is building;
//   - CUPTI's graph callbacks say which executable graphs are made from that graph, and the
//     launch callback sees each launch of one (on the launching thread, at the launch's exit):
//     each captured launch then takes a slice of the ring, a device-to-device copy of its
//     memory into the slice is enqueued on the replay's stream (after the replay, before
//     anything the program enqueues next, so the next replay cannot overwrite it first), and
//     the slice is queued as an ordinary launch: copied back, decoded and delivered under the
//     kernel node of the capture site, in the sessions open at the capture while they stay
//     open.
// The memory stays for the process's life (a graph may replay after every session ended).
// Room for it is bounded (graph_room_bytes); past it a captured launch writes a discard buffer
// and keeps no regions, counted in graph_dropped and said at finalize.
#include <algorithm>

#include "backends/instrumentation/instr_runtime_parts.h"
#include "common/hot.h"

namespace proton::instr {

std::atomic<bool> InstrRuntime::s_graphs_captured{false};

namespace {

// The calling thread in relaxed capture mode for the scope: its allocations neither fail nor
// invalidate a global-mode capture (this thread's or another's).
class RelaxedCapture {
 public:
  explicit RelaxedCapture(DeviceApi& api) : api_(api), previous_(api.relax_capture_mode()) {}
  ~RelaxedCapture() { api_.restore_capture_mode(previous_); }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  DeviceApi& api_;
  int previous_;
};

}  // namespace

void InstrRuntime::drop_captured(const char* why) {
  ++stats_.graph_dropped;
  if (std::find(errors_.begin(), errors_.end(), why) == errors_.end() && errors_.size() < 8)
    errors_.push_back(why);
}

bool InstrRuntime::capturing(uint64_t stream) {
  // The legacy default stream cannot be captured: the usual launch asks nothing.
  return stream != 0 && api_ && api_->is_capturing(stream);
}

uint64_t InstrRuntime::alloc_captured(uint64_t need, bool paused, bool via_callback) {
  RelaxedCapture relaxed(*api_);
  const Pool* open = paused ? nullptr : lowest_open_pool();
  if (open != nullptr) {
    // Several GPUs: as on the ring, one device per process.
    if (const uint64_t ctx = other_context(*open)) return other_context_slice(need, ctx);
  }
  if (open != nullptr && !via_callback) {
    // Its replays would never be seen: the allocation would be for nothing.
    static constexpr const char* kUnseen =
        "instrumented launches captured into CUDA graphs: their replays are seen by CUPTI's "
        "launch callbacks, which this process does not have; their regions are not recorded";
    drop_captured(kUnseen);
    return discard_buffer(need, api_->current_context(), /*capture=*/true);
  }
  const uint64_t room = graph_room_bytes != 0 ? graph_room_bytes : default_pool_bytes();
  if (open != nullptr && stats_.graph_bytes + need <= room) {
    auto c = std::make_unique<Captured>();
    c->bytes = need;
    c->device = api_->alloc_device(need);
    if (c->device != 0) {
      stats_.graph_bytes += need;
      ThreadSide& t = thread_side();
      t.valid = true;
      t.pool = nullptr;
      t.captured = c.get();
      // The exit comes from the launch callback, as for a slice of the ring.
      hot::this_thread().exit_work |= hot::kExitInstr;
      captured_.push_back(std::move(c));
      return captured_.back()->device;
    }
    if (errors_.size() < 8) {
      std::string why = api_->last_error();
      errors_.push_back("could not allocate memory for a launch captured into a CUDA graph" +
                        (why.empty() ? std::string() : ": " + why));
    }
  }
  if (open == nullptr) {
    ++stats_.paused;
  } else {
    ++stats_.graph_dropped;
  }
  return discard_buffer(need, api_->current_context(), /*capture=*/true);
}

void InstrRuntime::captured_exit(Captured& c, uint64_t function, uint64_t stream, ContextId ctx,
                                 uint64_t sessions, bool launched) {
  std::lock_guard lock(mu_);
  if (!launched) {  // nothing was captured: its memory stays unused
    ++stats_.failed_launches;
    return;
  }
  c.function = function;
  c.ctx = ctx;
  c.sessions = sessions & open_mask_.load(std::memory_order_relaxed);
  const uint64_t graph = api_->capture_graph(stream);
  if (graph == 0) {
    static constexpr const char* kUnnamed =
        "an instrumented launch captured into a CUDA graph the driver did not name: its "
        "replays' regions are not recorded";
    drop_captured(kUnnamed);
    return;
  }
  {
    std::lock_guard graphs(graphs_mu_);
    graph_launches_[graph].push_back(&c);
  }
  ++stats_.graph_launches;
  s_graphs_captured.store(true, std::memory_order_relaxed);
}

void InstrRuntime::graph_instantiated(uint64_t graph, uint64_t exec) {
  std::lock_guard graphs(graphs_mu_);
  auto it = graph_launches_.find(graph);
  if (it == graph_launches_.end()) {
    exec_launches_.erase(exec);  // a handle of a destroyed executable graph, reused
  } else {
    exec_launches_[exec] = it->second;
  }
}

void InstrRuntime::graph_destroyed(uint64_t graph) {
  // Its executable graphs keep their captured launches; a new graph may reuse its handle.
  std::lock_guard graphs(graphs_mu_);
  graph_launches_.erase(graph);
}

void InstrRuntime::graph_exec_destroyed(uint64_t exec) {
  std::lock_guard graphs(graphs_mu_);
  exec_launches_.erase(exec);
}

void InstrRuntime::graph_launched(uint64_t exec, uint64_t stream, ContextId replay,
                                  ReplayPlace place) {
  // The launching thread, at the graph launch's exit (its own launches' exits are done).
  thread_local std::vector<std::pair<Captured*, ContextId>> launches;
  launches.clear();
  {
    std::lock_guard graphs(graphs_mu_);
    auto it = exec_launches_.find(exec);
    if (it == exec_launches_.end()) return;
    for (Captured* c : it->second) {
      // Where the replayed kernel's own record goes: "replay site / <captured_at> / capture
      // site", placed once per replay site.
      if (place != nullptr && (c->last_place == 0 || c->last_replay != replay)) {
        c->last_replay = replay;
        c->last_place = place(replay, c->ctx);
      }
      launches.emplace_back(c, place != nullptr ? c->last_place : c->ctx);
    }
  }
  DeviceApi* api = capture_api_.load(std::memory_order_acquire);
  if (api == nullptr) return;
  if (stream != 0 && api->is_capturing(stream)) {
    // Launched into another capture: a copy enqueued now would be captured too, into a slice
    // of the ring the outer graph would keep.
    replays_unheard_.fetch_add(launches.size(), std::memory_order_relaxed);
    return;
  }
  const uint64_t open = open_mask_.load(std::memory_order_relaxed);
  for (auto [c, ctx] : launches) {
    if ((c->sessions & open) == 0) {
      replays_unheard_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // A slice as for a launch (or the discard buffer, counted, when the pool stays full), the
    // replay's records copied into it after the replay, and the launch's usual exit.
    const uint64_t slice = alloc(c->bytes, kGraphCopyAlignment, 0);
    const bool copied = api->copy_on(stream, slice, c->device, c->bytes);
    if (copied) {
      replays_copied_.fetch_add(1, std::memory_order_relaxed);
    } else {
      std::lock_guard lock(mu_);
      note_copy_error("copying a CUDA-graph replay's records into the ring");
    }
    launch_exit(c->function, stream, ctx, c->sessions, copied);
  }
  // alloc() asked for a launch's exit on this thread's line: this is that exit.
  hot::this_thread().exit_work &= static_cast<uint8_t>(~hot::kExitInstr);
}

}  // namespace proton::instr
