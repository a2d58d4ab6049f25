// The state a kernel launch reads, gathered into one cache line of thread-local storage and one
// of globals.
//
// Timed inside real launches on an H100 (PROTON_DIAG_CALLBACK=timed), the launch callback took
// ~60 ns at API enter and ~30 ns at exit, where a tight loop runs the same code in ~14 ns for
// both: between two launches the framework runs microseconds of its own code, our lines fall
// out of L1, and each one the callback touches comes back at L2 latency, one after another.
// So the launch path is costed in cache lines. Its fields used to sit in six thread_locals and
// five globals of four translation units, each thread_local found by a call to __tls_get_addr
// (the extension is a dlopen'd module) and each global in a line of its own.
//
// Every field still belongs to one component, which alone writes it (named beside it); this
// header only decides where it lives. Plain types and constinit: no TLS init guard.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/ids.h"

namespace proton {

class ThreadStage;

namespace hot {

struct alignas(64) Thread {
  // ThreadContext: this thread's context for its launches.
  ContextId effective;  // path incl. state, valid when attached
  bool attached;        // this thread has scopes or a state of its own
  // LaunchOps: the launch-metadata op the next launch carries (0 = none).
  uint32_t pending_op;
  // LaunchStage: where this thread stages its launch tags (null until its first launch).
  ThreadStage* stage;
  // CUPTI launch callbacks: launch APIs entered and not exited, valid while epoch matches
  // Globals::callback_epoch; the outermost launch in progress and its op.
  uint32_t nest_epoch;
  uint32_t nest_depth;
  uint64_t nest_correlation;
  uint32_t nest_op;
};
static_assert(sizeof(Thread) == 64);

struct alignas(64) Globals {
  // LaunchStage (written by the session layer under its API lock, read relaxed per launch).
  std::atomic<SessionMask> active_sessions{0};
  std::atomic<SessionMask> python_sessions{0};
  std::atomic<SessionMask> trace_sessions{0};
  std::atomic<bool> trace_active{false};
  // CUPTI launch callbacks: bumped to forget every thread's nesting at once.
  std::atomic<uint32_t> callback_epoch{1};
  // ThreadContext: the main thread's context, inherited by threads without scopes of their own.
  std::atomic<ContextId> main_effective{kRootContext};
};
static_assert(sizeof(Globals) == 64);

// Hidden: defined in this module, so reached without the GOT, and the thread_local with the
// module's one TLS lookup (local-dynamic) rather than a lookup of its own.
[[gnu::visibility("hidden")]] extern constinit thread_local Thread thread;
[[gnu::visibility("hidden")]] extern constinit Globals globals;

/// The calling thread's Thread, looked up once. GCC treats a thread_local's address as cheap to
/// recompute and redoes the __tls_get_addr call after every call it cannot see through; an
/// address that went through an empty asm is opaque to it, so it stays in a register.
inline Thread& this_thread() {
  Thread* self = &thread;
#if defined(__GNUC__)
  asm("" : "+r"(self));
#endif
  return *self;
}

}  // namespace hot
}  // namespace proton
