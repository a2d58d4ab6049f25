// Attributes completed kernel records to the contexts that launched them.
//
// Runs on whatever thread the backend delivers records from (CUPTI's buffer-completion
// thread, or the thread that calls flush). Before each batch it drains every thread's launch
// tags into a correlation map; a record whose tag is found goes to the sessions and context
// recorded at launch time. One tag can serve several records (a graph launch fans out to
// many kernels): the tag says how many to expect, and 0 means "unknown" (graph_attribution.h
// says when such a tag is forgotten).
//
// A record whose tag is not there yet is kept and retried with the next batch (tags are
// pushed before the launch, so this only happens when the launch was not intercepted); if
// still unmatched, or at settle(), it is attributed to the root of the active sessions and
// counted as unattributed, unless its kernel started while every session was paused.
//
// CUDA graphs (GraphAttribution): a kernel record with a graph node id is delivered under its
// replay's context extended by the node's capture-site path; tags of launches made during
// stream capture (they never run) are dropped; graph launches of unknown fan-out are forgotten
// by the rules of graph_attribution.h, so replaying a graph forever keeps memory flat.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <vector>

#include "attribution/graph_attribution.h"
#include "attribution/kernel_record.h"
#include "attribution/launch_stage.h"
#include "attribution/record.h"
#include "common/id_map.h"

namespace proton {

/// Where attributed records go (implemented by the session layer; tests use fakes).
///
/// The processor makes every call below between begin_batch() and end_batch(), from one
/// thread at a time and under its own lock, so a sink can take the lock that guards its
/// session list once per batch of records instead of once per record.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void begin_batch() {}
  virtual void end_batch() {}
  /// One record of any kind for the sessions in `sessions` (kAllSessions: every session that
  /// collects its kind): a kernel for the sessions of its launch, a scope event for the trace
  /// sessions of its tag, lost records for the sessions active now.
  virtual void deliver(SessionMask sessions, const Record& record) = 0;
};

class RecordProcessor {
 public:
  struct Stats {
    uint64_t records = 0;       // records processed
    uint64_t unattributed = 0;  // records with no launch tag
    uint64_t dropped = 0;       // reported lost by the backend
    uint64_t pending_tags = 0;  // launches still waiting for kernels
    uint64_t waiting = 0;       // records waiting for a tag
  };

  explicit RecordProcessor(RecordSink& sink, GraphRegistry& graphs = GraphRegistry::global())
      : sink_(sink), graphs_(graphs) {}

  /// Attributes one batch. Thread-safe; batches are serialised.
  void process(std::span<const KernelRecord> records);
  /// Records the backend lost, for the sessions active now.
  void report_dropped(uint64_t count);
  /// Every session was paused at `at_ns` / one resumed at `at_ns` (the backend's clock, that of
  /// KernelRecord::start_ns). A paused backend tags no launch, so a kernel launched while paused
  /// comes without a tag; one that started inside a pause is dropped even when its record is
  /// processed after the resume (it went to the root of the sessions active then).
  void paused(uint64_t at_ns);
  void resumed(uint64_t at_ns);
  /// Hands a record that needs no launch tag (PC samples, counter values and samples) to the
  /// sink for `sessions`, serialised with kernel batches (a PC sample's attribution reads the
  /// kernel time delivered so far; counter values join kernels by correlation). Thread-safe.
  void deliver(const Record& record, SessionMask sessions = kAllSessions);
  /// Attributes every waiting record (end of a flush) and forgets tags that expect an
  /// unknown number of kernels only if `forget_open_tags`.
  void settle(bool forget_open_tags = false);
  /// Takes a finalized session out of every tag still open (and every tag staged so far), so
  /// a session that later reuses its slot never receives kernels launched before it existed.
  void forget_session(SessionId id);
  Stats stats() const;
  /// Launch tags still waiting for kernels, staged ones included (drains the threads' queues:
  /// the backend's periodic check asks this to decide whether to flush).
  size_t held_tags();
  /// A consumer awaits records that CUPTI keeps back in partly filled buffers (a collective
  /// stream's): the backend's periodic check flushes at its next tick. Any thread.
  void request_flush() { flush_requested_.store(true, std::memory_order_relaxed); }
  /// Whether a flush was asked for since the last call (the periodic check).
  bool take_flush_request() { return flush_requested_.exchange(false, std::memory_order_relaxed); }

  /// Phases: every tag drained from now on is stamped with a new epoch (LaunchStage::
  /// phase_epoch, in LaunchTag::flags). Tags staged before this call are drained first, so a
  /// thread's launches before advance_epoch() keep the old epoch. `on_advanced(new_epoch)` runs
  /// under the processor lock (and inside a sink batch), before any record of the new epoch is
  /// delivered.
  template <typename Fn>
  uint32_t advance_epoch(Fn&& on_advanced) {
    std::lock_guard lock(mu_);
    SinkBatch batch(sink_);
    drain_tags();
    uint32_t next = LaunchStage::phase_epoch.load(std::memory_order_relaxed) + 1;
    LaunchStage::phase_epoch.store(next, std::memory_order_relaxed);
    on_advanced(next);
    return next;
  }
  /// The oldest epoch that may still have kernels to deliver: every launch stamped with an
  /// older epoch has been delivered (or a flush has passed it). The current epoch when none.
  uint32_t oldest_open_epoch() const;

 private:
  // Brackets the sink calls of one locked section (taken after mu_, released before it).
  class SinkBatch {
   public:
    explicit SinkBatch(RecordSink& sink) : sink_(sink) { sink_.begin_batch(); }
    ~SinkBatch() { sink_.end_batch(); }
    SinkBatch(const SinkBatch&) = delete;
    SinkBatch& operator=(const SinkBatch&) = delete;

   private:
    RecordSink& sink_;
  };
  struct Pending {
    LaunchTag tag;
    uint32_t remaining;  // 0 = unknown fan-out: see graph_attribution.h
    uint32_t graph = 0;  // graph id of its records, once one arrived (graph launches)
  };
  void close_one(uint32_t epoch);            // requires mu_: a tag of `epoch` has all its kernels
  void drain_tags();                         // requires mu_
  bool attribute(const KernelRecord& r);     // requires mu_
  void unattributed(const KernelRecord& r);  // requires mu_
  void retire(uint64_t correlation);         // requires mu_: forget a tag, kernels or not

  RecordSink& sink_;
  mutable std::mutex mu_;  // guards everything below; never held while calling user code
  // correlation -> launch tag: the launches in flight, which the flush policy keeps to about
  // its threshold plus what a fast host launches between two checks (8192 + ~10k on an H200
  // replaying graphs). Sized for that up front: the pages are resident only once used (see
  // id_map.h), and a map that grew after warm-up showed as a 2 MB step in the flat-memory GPU
  // test. settle(true) gives the memory back.
  IdMap<Pending> tags_{32768};
  std::vector<KernelRecord> waiting_;  // records seen before their tag
  std::vector<KernelRecord> retry_;    // scratch: last batch's waiting records, retried
  // Tags still expecting kernels, per epoch, oldest first (epochs only grow). Unknown fan-out
  // tags are not counted: nothing says when they are done.
  std::vector<std::pair<uint32_t, uint64_t>> open_epochs_;
  uint32_t settled_epoch_ = 0;  // every epoch before it is complete (set by settle())
  GraphAttribution graphs_;
  std::vector<uint64_t> captured_;  // scratch: launches made during stream capture
  Stats stats_;
  // The latest pauses, [start, end) on the backend's clock (end UINT64_MAX while paused); a
  // record is processed within a few flushes of its kernel, so a few pauses back is enough.
  static constexpr size_t kPausesKept = 16;
  std::deque<std::pair<uint64_t, uint64_t>> pauses_;
  bool in_pause(uint64_t start_ns) const;     // requires mu_
  std::atomic<bool> flush_requested_{false};  // not guarded: request_flush / take_flush_request
};

}  // namespace proton
