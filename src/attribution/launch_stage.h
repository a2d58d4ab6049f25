// Per-thread staging of launch tags: the hot path of the profiler.
//
// A launch callback calls LaunchStage::tag(correlation): it reads the thread's context id and
// the active-session mask and appends a 48-byte LaunchTag to a queue owned by the calling
// thread. No lock, no allocation (blocks are recycled), no strings. The record-processing
// thread drains every thread's queue before it attributes a batch of activity records.
//
// Tags are 48 bytes; the queue layout: a single-producer single-consumer chain of fixed blocks. The
// owning thread appends to the tail block and publishes with a release store of the block's count;
// the consumer reads up to that count. Full blocks are linked to a fresh block taken from a free
// stack that the consumer refills with drained blocks, so steady state allocates nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/hot.h"
#include "common/ids.h"
#include "context/launch_ops.h"
#include "context/thread_context.h"

namespace proton {

struct LaunchTag {
  uint64_t correlation;
  SessionMask sessions;      // sessions active at launch time
  uint64_t cpu_ns;           // launch time (steady clock), set only while a trace is recorded
  ContextId context;         // shadow context (scopes + state)
  ContextId python_context;  // Python call path while a python-context session is active
  uint32_t fanout;           // kernels this launch produces: 1, N for a graph, 0 = unknown
  uint32_t flags;            // kTag* bits
  uint32_t op;               // launch-metadata entry attached to this launch (0 = none)
  uint32_t thread;           // small index of the launching thread (trace lanes)
};
static_assert(sizeof(LaunchTag) == 48);

/// LaunchTag::flags: the record had no launch tag and was attributed to the root.
inline constexpr uint32_t kTagUnattributed = 1;
/// LaunchTag::flags: not a launch but a CPU scope opening / closing on a traced thread
/// (cpu_ns = when, context = the scope's path); see LaunchStage::scope_event.
inline constexpr uint32_t kTagScopeEnter = 2;
inline constexpr uint32_t kTagScopeExit = 4;
/// LaunchTag::flags: metrics added to the scope open on a traced thread (op = a LaunchOps
/// entry holding them); staged in order with the scope's enter and exit.
inline constexpr uint32_t kTagScopeMetrics = 8;
/// LaunchTag::flags bits 8..31: the phase epoch (mod 2^24) the record processor stamps on a
/// tag when it drains it; launch sites leave them 0. See RecordProcessor::advance_epoch.
inline constexpr uint32_t kTagEpochShift = 8;
inline constexpr uint32_t kTagEpochMask = 0xFFFFFFu;
inline uint32_t tag_epoch(const LaunchTag& t) {
  return (t.flags >> kTagEpochShift) & kTagEpochMask;
}

class ThreadStage;
struct HostCall;

/// A block of a thread's tag queue. Its header is the producer's to publish, the consumer's to
/// read; `stage` lets the producer find the free list on the rare push that fills a block.
struct TagBlock {
  static constexpr uint32_t kTags = 1024;
  explicit TagBlock(ThreadStage* owner) : stage(owner) {}
  std::atomic<uint32_t> count{0};
  std::atomic<TagBlock*> next{nullptr};
  ThreadStage* const stage;
  LaunchTag tags[kTags];
};

class ThreadStage {
 public:
  static constexpr uint32_t kBlockTags = TagBlock::kTags;

  ThreadStage();
  ~ThreadStage();
  ThreadStage(const ThreadStage&) = delete;
  ThreadStage& operator=(const ThreadStage&) = delete;

  /// The cursor the owning thread starts from (once, before its first push).
  TagCursor start(uint32_t thread_index) const { return TagCursor{first_, 0, thread_index}; }

  /// Producer side (owning thread only), through the cursor it keeps: touches the cursor and
  /// the tag's slot, and the stage itself only when a block fills.
  static void push(TagCursor& c, const LaunchTag& tag) {
    if (c.count == kBlockTags) [[unlikely]] {
      c.block = c.block->stage->next_block(c.block);
      c.count = 0;
    }
    c.block->tags[c.count] = tag;
    c.block->count.store(++c.count, std::memory_order_release);
  }

  /// Consumer side (one thread at a time): calls fn for every tag not yet drained.
  template <typename Fn>
  void drain(Fn&& fn) {
    for (;;) {
      uint32_t n = head_->count.load(std::memory_order_acquire);
      for (uint32_t i = consumed_; i < n; ++i)
        fn(head_->tags[i]);
      consumed_ = n;
      if (n < kBlockTags) return;
      TagBlock* next = head_->next.load(std::memory_order_acquire);
      if (next == nullptr) return;  // producer has not linked the next block yet
      recycle(head_);
      head_ = next;
      consumed_ = 0;
    }
  }

  /// Set when the owning thread exits; the consumer frees the stage after a final drain.
  std::atomic<bool> orphaned{false};

 private:
  TagBlock* next_block(TagBlock* full);  // producer: link a fresh block after the full one
  void recycle(TagBlock* b);             // consumer: return a drained block to the free stack

  TagBlock* const first_;                 // the producer's first block (start())
  TagBlock* head_;                        // consumer only
  uint32_t consumed_ = 0;                 // consumer only
  std::atomic<TagBlock*> free_{nullptr};  // Treiber stack: consumer pushes, producer pops (no
                                          // ABA: a single popper)
};

/// The process-wide set of thread stages and the session mask launches are tagged with.
class LaunchStage {
 public:
  /// Hot path: tags the launch `correlation` with the calling thread's context.
  static void tag(uint64_t correlation, uint32_t fanout = 1) {
    tag(hot::this_thread(), correlation, fanout);
  }
  /// The same, for a caller that holds the calling thread's hot::Thread already.
  static void tag(hot::Thread& self, uint64_t correlation, uint32_t fanout) {
    if (self.tags.block == nullptr) [[unlikely]]
      register_thread(self);
    SessionMask active = active_sessions.load(std::memory_order_relaxed);
    ContextId python = kRootContext;
    if ((active & python_sessions.load(std::memory_order_relaxed)) != 0) [[unlikely]]
      python = python_context();
    ThreadStage::push(self.tags, LaunchTag{correlation, active, trace_clock(),
                                           ThreadContext::launch_context(self), python, fanout, 0,
                                           LaunchOps::take_pending(self), self.tags.thread});
  }

  /// The calling thread's Python call path through the installed provider (kRootContext when
  /// none is installed or the thread runs no Python code).
  static ContextId python_context() noexcept;

  /// Launch time for a tag: steady-clock ns while a trace session is active, else 0 (one
  /// relaxed load when no trace is recorded).
  static uint64_t trace_clock() {
    if (!trace_active.load(std::memory_order_relaxed)) return 0;
    return steady_ns();
  }

  /// Stages a CPU scope opening or closing on the calling thread for the active trace
  /// sessions, in order with its launches (installed as ThreadContext's scope observer).
  static void scope_event(ContextId scope, bool enter);
  /// Stages metrics added to the innermost open scope of the calling thread (`set`, a
  /// ScopeMetricSets entry whose reference the staged tag takes over) for the active trace
  /// sessions: their trace shows them on that scope's event. False: no trace session is active,
  /// nothing was staged and the caller keeps its reference.
  static bool scope_metrics(ContextId scope, uint32_t set);
  /// Stages a host call that blocked the calling thread (attribution/host_call.h) for the active
  /// sessions, with the thread's context as a launch would have it. Rare calls only (a
  /// synchronize, a blocking copy): not the launch path. Throws std::bad_alloc only on the
  /// thread's first tag.
  static void host_call(const HostCall& call);
  /// Whether an active session records a trace (scope metrics are staged only then).
  static bool tracing() {
    return (active_sessions.load(std::memory_order_relaxed) &
            trace_sessions.load(std::memory_order_relaxed)) != 0;
  }

  /// Drains all threads' tags (consumer; called by the RecordProcessor under its lock).
  static void drain(const std::function<void(const LaunchTag&)>& fn);

  // The flags below live in hot::globals, beside the rest of what a launch reads.
  /// Sessions that launches are currently attributed to (bit i = session i).
  static constexpr std::atomic<SessionMask>& active_sessions = hot::globals.active_sessions;
  /// Sessions with context="python" (bit i = session i): launches walk Python frames only while
  /// one of them is active. Written by the session layer under its API lock.
  static constexpr std::atomic<SessionMask>& python_sessions = hot::globals.python_sessions;
  /// Returns the calling thread's Python call path, or kRootContext when it has none. The core
  /// knows nothing of Python: the Python module installs this at import. Must not throw.
  using PythonContextFn = ContextId (*)() noexcept;
  static inline std::atomic<PythonContextFn> python_context_provider{nullptr};
  /// True while an active session records a trace: launches then carry cpu_ns. Written by the
  /// session layer under its API lock; read relaxed on the hot path.
  static constexpr std::atomic<bool>& trace_active = hot::globals.trace_active;
  /// Sessions that record a trace (bit i = session i); same writer as trace_active.
  static constexpr std::atomic<SessionMask>& trace_sessions = hot::globals.trace_sessions;
  /// The phase epoch the record processor stamps on tags it drains now (see
  /// RecordProcessor::advance_epoch, the only writer, under its lock).
  static inline std::atomic<uint32_t> phase_epoch{0};

 private:
  static void register_thread(hot::Thread& self);
};

}  // namespace proton
