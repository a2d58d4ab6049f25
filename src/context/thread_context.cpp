#include "context/thread_context.h"

#include <stdexcept>

#include "common/name_table.h"
#include "context/context_tree.h"

namespace proton {

namespace detail {
std::atomic<ContextId> main_scopes{kRootContext};
}  // namespace detail

namespace {
std::atomic<ThreadContext*> g_main{nullptr};
}

ThreadContext& ThreadContext::current() {
  thread_local ThreadContext ctx;
  return ctx;
}

void ThreadContext::set_main_thread() {
  ThreadContext& self = current();
  ThreadContext* old = g_main.exchange(&self);
  if (old == &self) return;
  if (old != nullptr) old->is_main_ = false;
  self.is_main_ = true;
  self.recompute();
}

ContextId ThreadContext::metric_context() {
  if (!hot::this_thread().attached) return detail::main_scopes.load(std::memory_order_relaxed);
  return current().scope_context();
}

ContextId ThreadContext::scope_context() const {
  if (!stack_.empty()) return stack_.back();
  return is_main_ ? kRootContext : base_;
}

void ThreadContext::enter_scope(NameId name) {
  if (!is_main_ && stack_.empty() && state_ == kNoName) {
    base_ = detail::main_scopes.load(std::memory_order_acquire);
  }
  stack_.push_back(ContextTree::global().child(scope_context(), name));
  python_sites_.push_back(kRootContext);
  recompute();
  if (ScopeObserver f = scope_observer.load(std::memory_order_relaxed)) f(stack_.back(), true);
}

void ThreadContext::exit_scope(NameId name) {
  if (stack_.empty()) {
    throw std::logic_error("exit_scope: no scope is open on this thread");
  }
  NameId top = ContextTree::global().node(stack_.back()).name;
  if (name != kNoName && name != top) {
    auto& names = NameTable::global();
    throw std::logic_error("exit_scope: expected to close scope '" + std::string(names.name(top)) +
                           "' but got '" + std::string(names.name(name)) + "'");
  }
  if (ScopeObserver f = scope_observer.load(std::memory_order_relaxed)) f(stack_.back(), false);
  stack_.pop_back();
  python_sites_.pop_back();
  recompute();
}

void ThreadContext::exit_scope(std::string_view name) {
  if (stack_.empty()) {
    throw std::logic_error("exit_scope: no scope is open on this thread");
  }
  std::string_view top = NameTable::global().name(ContextTree::global().node(stack_.back()).name);
  if (name != top) {
    throw std::logic_error("exit_scope: expected to close scope '" + std::string(top) +
                           "' but got '" + std::string(name) + "'");
  }
  if (ScopeObserver f = scope_observer.load(std::memory_order_relaxed)) f(stack_.back(), false);
  stack_.pop_back();
  python_sites_.pop_back();
  recompute();
}

void ThreadContext::set_state(NameId state) {
  if (!is_main_ && stack_.empty() && state_ == kNoName && state != kNoName) {
    base_ = detail::main_scopes.load(std::memory_order_acquire);
  }
  state_ = state;
  recompute();
}

uint32_t ThreadContext::depth() const {
  const hot::Thread& self = hot::this_thread();
  ContextId ctx = is_main_ || self.attached ? self.effective : hot::globals.main_effective.load();
  return ContextTree::global().node(ctx).depth;
}

void ThreadContext::reset() {
  stack_.clear();
  python_sites_.clear();
  state_ = kNoName;
  base_ = kRootContext;
  recompute();
}

void ThreadContext::recompute() {
  ContextId scopes = scope_context();
  ContextId effective = state_ == kNoName ? scopes : ContextTree::global().child(scopes, state_);
  hot::Thread& self = hot::this_thread();
  self.effective = effective;
  self.attached = is_main_ || !stack_.empty() || state_ != kNoName;
  if (is_main_) {
    detail::main_scopes.store(scopes, std::memory_order_release);
    hot::globals.main_effective.store(effective, std::memory_order_release);
  }
}

}  // namespace proton
