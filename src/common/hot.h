// The state a kernel launch reads, gathered into one cache line per thread and one of globals,
// and a way to find the thread's line that costs no more than the line itself.
//
// Timed inside real launches on an H100 (PROTON_DIAG_CALLBACK=timed), the launch callback took
// 60-75 ns at API enter and 30-50 ns at exit, where a tight loop runs the same code in ~14 ns
// for both: between two launches the framework runs microseconds of its own code, our lines
// fall out of L1, and each line the callback touches comes back from L2 or L3, one after
// another. So the launch path is costed in cache lines. Its fields used to sit in six
// thread_locals and five globals of four translation units; each thread_local was found by a
// call to __tls_get_addr (the extension is a dlopen'd module, so its TLS is dynamic), a chain
// of five more lines: the PLT stub, the GOT, ld.so's code, the thread's DTV, the TLS generation.
//
// Here a thread's hot state is a slot of a process-wide table, indexed by a hash of the
// thread pointer (%fs:0 on x86-64, TPIDR_EL0 on AArch64: one register read; the line it points
// at is the thread's TCB, which every function with a stack protector reads anyway). A thread
// claims its slot on first use and gives it back when it exits; a thread whose slot is taken
// (a hash collision), or a platform without a thread-pointer read, uses a thread_local instead,
// found the slow way. So every thread has exactly one Thread, and the common case reaches it
// in one line.
//
// Every field belongs to one component, which alone writes it (named beside it), and only the
// owning thread reads it; this header only decides where it lives.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/ids.h"

namespace proton {

struct TagBlock;

/// Where a thread appends its next launch tag (see ThreadStage): kept by the thread itself, in
/// its hot::Thread, so a launch reaches the block without a line of the stage in between.
struct TagCursor {
  TagBlock* block = nullptr;  // null until the thread's first tag
  uint32_t count = 0;         // tags in block, as published in its count
  uint32_t thread = 0;        // small index of the thread (LaunchTag::thread)
};
static_assert(sizeof(TagCursor) == 16);

namespace hot {

struct alignas(64) Thread {
  // The thread pointer of the thread that owns this table slot (0 = free). Claimed and given
  // back by compare-and-swap; the fields below are touched only by the owner.
  std::atomic<uintptr_t> owner{0};
  // LaunchStage: where this thread stages its launch tags.
  TagCursor tags;
  // CUPTI launch callbacks: the outermost launch in progress and its op; launch APIs entered
  // and not exited, valid while nest_epoch matches Globals::callback_epoch.
  uint64_t nest_correlation = 0;
  uint32_t nest_op = 0;
  uint32_t nest_epoch = 0;
  uint32_t nest_depth = 0;
  // ThreadContext: this thread's context for its launches.
  ContextId effective = kRootContext;  // path incl. state, valid when attached
  // LaunchOps: the launch-metadata op the next launch carries (0 = none).
  uint32_t pending_op = 0;
  bool attached = false;  // ThreadContext: this thread has scopes or a state of its own
  // Work the launch callback does at the exit of the outermost API call in progress, as kExit*
  // bits, each set by its component at the call's enter: one test at every exit, whatever the
  // number of components. In the padding: the line stays 64 bytes.
  uint8_t exit_work = 0;

  /// Back to a fresh thread's values (the owner is left as it is).
  void reset();
};
static_assert(sizeof(Thread) == 64);

/// Thread::exit_work bits. Hardware counters: this launch opened a counter range, closed at its
/// exit (backends/cupti/range_profiler.h).
inline constexpr uint8_t kExitCounterRange = 1;
/// Instrumentation: this thread's launch in progress got a profile-scratch slice whose job the
/// launch callback queues at API exit (backends/instrumentation/instr_runtime.h).
inline constexpr uint8_t kExitInstr = 2;
/// Host calls: a synchronize or copy being timed, measured at its exit
/// (backends/cupti/host_calls.h).
inline constexpr uint8_t kExitHostCall = 4;

struct alignas(64) Globals {
  // LaunchStage (written by the session layer under its API lock, read relaxed per launch).
  std::atomic<SessionMask> active_sessions{0};
  std::atomic<SessionMask> python_sessions{0};
  std::atomic<SessionMask> trace_sessions{0};
  std::atomic<bool> trace_active{false};
  // CUPTI launch callbacks: on (started and not paused). The instrumentation runtime then
  // queues a launch's copy-back from the callback at the launch's exit (no Python hook).
  std::atomic<bool> launch_callbacks_on{false};
  // CUPTI kernel records off (BackendOptions::kernel_records): the launch callbacks keep their
  // nesting and the instrumentation's exit, but tag no launch (no record would claim it).
  std::atomic<bool> kernel_records_off{false};
  // CUPTI launch callbacks: bumped to forget every thread's nesting at once.
  std::atomic<uint32_t> callback_epoch{1};
  // ThreadContext: the main thread's context, inherited by threads without scopes of their own.
  std::atomic<ContextId> main_effective{kRootContext};
  // Hardware counters: the range profiler while mode="counters" runs, else null. Read in the
  // launch callback next to callback_epoch (same line), so counters off costs no extra line.
  std::atomic<void*> counter_hook{nullptr};
};
static_assert(sizeof(Globals) == 64);

inline constexpr size_t kThreadSlots = 1024;  // 64 KiB

// Hidden: defined in this module, so reached RIP-relative, without the GOT.
[[gnu::visibility("hidden")]] extern constinit Globals globals;
[[gnu::visibility("hidden")]] extern constinit Thread thread_slots[kThreadSlots];

/// The calling thread's pointer (the address its TLS is found from), or 0 where not readable.
inline uintptr_t thread_pointer() {
  uintptr_t tp = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  asm("mov %%fs:0, %0" : "=r"(tp));
#elif defined(__aarch64__) && defined(__GNUC__)
  asm("mrs %0, tpidr_el0" : "=r"(tp));
#endif
  return tp;
}

/// The table slot a thread pointer hashes to (thread pointers are far apart and aligned:
/// Fibonacci hashing keeps the high, well-mixed bits).
inline size_t slot_of(uintptr_t tp) {
  return static_cast<size_t>((static_cast<uint64_t>(tp) * 0x9E3779B97F4A7C15ull) >> 54);
}
static_assert(kThreadSlots == size_t{1} << 10);

/// Claims the calling thread's slot, or falls back to its thread_local (see above).
Thread& this_thread_slow() noexcept;

/// The calling thread's Thread.
inline Thread& this_thread() noexcept {
  uintptr_t tp = thread_pointer();
  Thread& slot = thread_slots[slot_of(tp)];
  if (slot.owner.load(std::memory_order_relaxed) == tp && tp != 0) [[likely]]
    return slot;
  return this_thread_slow();
}

/// Slots claimed now (tests and diagnostics).
size_t claimed_thread_slots() noexcept;

}  // namespace hot
}  // namespace proton
