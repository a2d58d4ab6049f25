// Per-thread calling context: the scope stack and state of one thread.
//
// The only thing a kernel launch needs is `launch_context()`: one thread_local load and, for a
// thread that never opened a scope of its own, one relaxed atomic load of the main thread's
// context. Everything else (interning, trie lookups, mismatch checks) happens when scopes change.
//
// Threads that never opened a scope (autograd's backward threads, pools) attribute their
// kernels to the main thread's current context. When such a thread opens its first scope, the
// new scope is placed under the main thread's scopes at that moment, as triton.profiler does.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <vector>

#include "common/hot.h"
#include "common/ids.h"

namespace proton {

namespace detail {
/// The main thread's current path without its state (published on every change; the path with
/// its state is hot::globals.main_effective).
extern std::atomic<ContextId> main_scopes;
}  // namespace detail

class ThreadContext {
 public:
  /// The calling thread's context.
  static ThreadContext& current();

  /// Marks the calling thread as the one others inherit from (the Python main thread).
  static void set_main_thread();

  /// Hot path: the context a kernel launched now by this thread belongs to.
  static ContextId launch_context() { return launch_context(hot::this_thread()); }
  /// The same, given the calling thread's hot::Thread.
  static ContextId launch_context(const hot::Thread& self) {
    return self.attached ? self.effective
                         : hot::globals.main_effective.load(std::memory_order_relaxed);
  }

  /// Where scope metrics of this thread go: its scope path, without the state.
  static ContextId metric_context();

  void enter_scope(NameId name);
  /// A scope the user opened (proton.scope): first lets `user_scope_hook` close what cannot
  /// hold user code (library NVTX ranges whose pops never came), then enter_scope.
  void enter_user_scope(NameId name) {
    if (UserScopeHook f = user_scope_hook.load(std::memory_order_relaxed)) f(*this);
    enter_scope(name);
  }
  /// Throws std::logic_error when no scope is open or `name` is not the innermost scope
  /// (pass kNoName to skip the name check).
  void exit_scope(NameId name);
  /// Same check by text: avoids interning (and its mutex) on every scope exit.
  void exit_scope(std::string_view name);

  /// Replaces the thread's state (kNoName clears it).
  void set_state(NameId state);
  NameId state() const { return state_; }

  /// Number of frames in the current effective path (inherited scopes, own scopes, state).
  uint32_t depth() const;
  /// Open scopes of this thread alone.
  size_t open_scopes() const { return stack_.size(); }
  /// Current path without the state.
  ContextId scope_context() const;

  /// The Python call path recorded when the innermost open scope was entered, for
  /// context="python" sessions (their scope metrics go there, as triton.profiler places a scope
  /// at the Python path of its entry); kRootContext when none was recorded or no scope is open.
  ContextId scope_python_site() const {
    return python_sites_.empty() ? kRootContext : python_sites_.back();
  }
  /// Records `site` for the innermost open scope (no effect when none is open).
  void set_scope_python_site(ContextId site) {
    if (!python_sites_.empty()) python_sites_.back() = site;
  }

  /// Forgets this thread's scopes and state (tests, and after fork).
  void reset();

  /// Called with (scope path, true) after a scope opens and (scope path, false) before it
  /// closes, on the scope's thread. Set by the session layer while a trace is recorded (so this
  /// layer needs no knowledge of traces); null otherwise: one relaxed load per scope change.
  using ScopeObserver = void (*)(ContextId scope, bool enter);
  static inline std::atomic<ScopeObserver> scope_observer{nullptr};

  /// Called on the thread before each user scope opens; set by the NVTX backend while it turns
  /// ranges into scopes, null otherwise (this layer knows nothing of NVTX). Never throws.
  using UserScopeHook = void (*)(ThreadContext& self) noexcept;
  static inline std::atomic<UserScopeHook> user_scope_hook{nullptr};

 private:
  void recompute();

  bool is_main_ = false;
  ContextId base_ = kRootContext;        // inherited from the main thread when this thread attached
  std::vector<ContextId> stack_;         // one entry per open scope: the path it created
  std::vector<ContextId> python_sites_;  // parallel to stack_: each scope's Python entry path
  NameId state_ = kNoName;
};

}  // namespace proton
