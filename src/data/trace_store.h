// A session's timeline: kernel and CPU-scope events, bounded in memory.
//
// Events are fixed-size plain records kept in chunks of kChunkEvents. Two ways to stay bounded:
//   - streaming (no budget): once more than kResidentChunks are full, the oldest chunk is handed
//     to the spill callback (the Chrome trace writer appends it to the output file) and reused,
//     so memory stays at a few MB and finalize only formats the tail;
//   - flight recorder (budget_bytes > 0): the newest budget_bytes of events are kept and the
//     oldest chunk is dropped (and counted) when a new one is needed; nothing is written before
//     finalize.
// Times are steady-clock ns (CPU domain); kernels are converted from the backend's clock with
// the offset measured when the trace started (see Runtime::start).
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/ids.h"

namespace proton {

struct TraceEvent {
  // kRegion (intra-kernel, data/region_metrics.h): stream = SM, correlation = CTA,
  // thread = warp, flags = warps per lane (granularity), op = the kernel's NameId, name = the
  // region's, launch_ns = its CTA's finalization time (ns), reserved = the SM clock (MHz); an
  // async event's thread has its ending warp + 1 in bits 16-31 (kTraceAsyncEndShift).
  // kHostCall (a synchronize or blocking copy on a CPU thread, attribution/host_call.h):
  // name = its tree frame's name, correlation = bytes copied, flags = 1 when it only finished
  // the copy before it (HostCall::continued).
  enum Kind : uint8_t { kKernel = 0, kScope = 1, kRegion = 2, kHostCall = 3 };
  uint64_t start_ns = 0;             // steady clock
  uint64_t end_ns = 0;               // steady clock
  uint64_t launch_ns = 0;            // kernel: CPU time of its launch (0 = unknown)
  uint64_t correlation = 0;          // kernel: launch correlation id; scope: its instance id
  ContextId context = kRootContext;  // the call path (kernel: where it was launched)
  NameId name = kNoName;             // kernel: its own name (scopes: the path's last frame)
  uint32_t device = 0;               // kernel: device id
  uint32_t stream = 0;               // kernel: stream id
  uint32_t thread = 0;               // launching thread / scope's thread (small index)
  // kernel: the launch-metadata entry of its launch (LaunchOps id, 0 = none; never freed);
  // scope: the metrics added to it (a ScopeMetricSets entry the store holds while it keeps the
  // event, 0 = none). The writer looks them up when it formats the event (a spilled chunk is
  // written before the store gives its sets back).
  uint32_t op = 0;
  uint8_t kind = kKernel;
  uint8_t device_type = 0;  // DeviceType of a kernel
  uint16_t flags = 0;       // kTraceFirstOfLaunch, kTraceUnattributed
  uint32_t reserved = 0;    // region: SM clock in MHz; else explicit tail padding (64 bytes)
};
static_assert(sizeof(TraceEvent) == 64);

/// TraceEvent::flags: the first kernel of its launch (a graph launch yields many).
inline constexpr uint16_t kTraceFirstOfLaunch = 1;
/// TraceEvent::flags: the kernel had no launch tag (context unknown).
inline constexpr uint16_t kTraceUnattributed = 2;
/// TraceEvent::flags: a kernel box drawn from its CTAs' global-timer values (instrumentation
/// without kernel records), not a CUPTI record: no correlation, no launch, no kernel time.
inline constexpr uint16_t kTraceFromRegions = 4;
/// kRegion: an async event's TraceEvent::thread holds its ending warp + 1 from this bit.
inline constexpr uint32_t kTraceAsyncEndShift = 16;
/// TraceEvent::stream of those boxes: their own lane per GPU, just above the region lanes.
inline constexpr uint32_t kRegionKernelLane = 0xffffffffu;

class TraceStore {
 public:
  static constexpr size_t kChunkEvents = 4096;  // 256 KiB per chunk
  static constexpr size_t kChunkBytes = kChunkEvents * sizeof(TraceEvent);
  // Streaming keeps ~4 MB resident: enough to batch file writes, small next to CUPTI buffers.
  static constexpr size_t kResidentChunks = 16;

  using Spill = std::function<void(std::span<const TraceEvent>)>;

  /// `budget_bytes` 0 streams full chunks to `spill`; otherwise keeps the newest events that
  /// fit in budget_bytes (at least two chunks) and never calls `spill`.
  TraceStore(uint64_t budget_bytes, Spill spill);
  /// Gives back the scope-metric sets its events and open scopes hold.
  ~TraceStore();
  TraceStore(const TraceStore&) = delete;
  TraceStore& operator=(const TraceStore&) = delete;

  void add(const TraceEvent& e);
  /// CPU scopes arrive as enter/exit pairs per thread; a completed pair becomes one event.
  void scope_enter(uint32_t thread, ContextId scope, uint64_t ns);
  void scope_exit(uint32_t thread, ContextId scope, uint64_t ns);
  /// Metrics (a ScopeMetricSets entry: the store takes a reference of its own) added to the
  /// innermost scope open on `thread`; several on one scope combine by their rules, as in the
  /// tree. A scope event's `op` is that set, held until the event leaves the store.
  void scope_metrics(uint32_t thread, uint32_t set);
  /// Closes every scope still open at `ns` (finalize); they are flagged as unfinished.
  void close_open_scopes(uint64_t ns);

  /// Calls fn(span) for the events held in memory, oldest first.
  void for_each_chunk(const std::function<void(std::span<const TraceEvent>)>& fn) const;

  uint64_t budget_bytes() const { return budget_bytes_; }
  uint64_t recorded() const { return recorded_; }                   // events ever added
  uint64_t dropped() const { return dropped_; }                     // events the budget pushed out
  uint64_t dropped_before_ns() const { return dropped_until_ns_; }  // latest dropped start
  uint64_t resident_bytes() const { return chunks_.size() * kChunkBytes; }
  uint64_t unfinished_scopes() const { return unfinished_scopes_; }

 private:
  using Chunk = std::vector<TraceEvent>;
  Chunk* tail();  // a chunk with room, spilling or dropping the oldest one when needed
  static void release_sets(const Chunk& c);  // the scope-metric sets of its scope events

  uint64_t budget_bytes_;
  size_t max_chunks_;  // chunks kept before the oldest is spilled or dropped
  Spill spill_;
  std::vector<std::unique_ptr<Chunk>> chunks_;  // oldest first (front erase is rare: per chunk)
  std::unique_ptr<Chunk> spare_;                // a recycled chunk, so steady state allocates none
  struct OpenScope {
    ContextId context;
    uint64_t start_ns;
    uint64_t id;      // scope instance, numbered from 1 in entry order (the trace's scope_id)
    uint32_t op = 0;  // its metrics so far (a ScopeMetricSets entry this store holds)
  };
  std::unordered_map<uint32_t, std::vector<OpenScope>> open_scopes_;
  uint64_t next_scope_id_ = 1;
  uint64_t recorded_ = 0;
  uint64_t dropped_ = 0;
  uint64_t dropped_until_ns_ = 0;
  uint64_t unfinished_scopes_ = 0;
};

}  // namespace proton
