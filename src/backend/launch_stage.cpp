#include "backend/launch_stage.h"

#include <algorithm>

namespace proton {

ThreadStage::ThreadStage() : tail_(new Block()), head_(tail_) {}

ThreadStage::~ThreadStage() {
  for (Block* b = head_; b != nullptr;) {
    Block* next = b->next.load(std::memory_order_relaxed);
    delete b;
    b = next;
  }
  for (Block* b = free_.load(std::memory_order_relaxed); b != nullptr;) {
    Block* next = b->next.load(std::memory_order_relaxed);
    delete b;
    b = next;
  }
}

void ThreadStage::next_block() {
  Block* b = free_.load(std::memory_order_acquire);
  while (b != nullptr &&
         !free_.compare_exchange_weak(b, b->next.load(std::memory_order_relaxed),
                                      std::memory_order_acquire, std::memory_order_acquire)) {
  }
  if (b == nullptr) {
    b = new Block();  // warm-up only: drained blocks come back through free_
  } else {
    b->count.store(0, std::memory_order_relaxed);
    b->next.store(nullptr, std::memory_order_relaxed);
  }
  tail_->next.store(b, std::memory_order_release);
  tail_ = b;
  tail_count_ = 0;
}

void ThreadStage::recycle(Block* b) {
  Block* top = free_.load(std::memory_order_relaxed);
  do {
    b->next.store(top, std::memory_order_relaxed);
  } while (
      !free_.compare_exchange_weak(top, b, std::memory_order_release, std::memory_order_relaxed));
}

namespace {

// Guards g_stages (registration once per thread, and draining).
std::mutex g_stages_mu;
std::vector<ThreadStage*>& stages() {
  static auto* v = new std::vector<ThreadStage*>();  // leaked: threads may exit after main
  return *v;
}

// Marks the thread's stage orphaned at thread exit; the consumer frees it.
struct StageOwner {
  ThreadStage* stage = nullptr;
  ~StageOwner() {
    if (stage != nullptr) stage->orphaned.store(true, std::memory_order_release);
  }
};
thread_local StageOwner tls_owner;

}  // namespace

ContextId LaunchStage::python_context() noexcept {
  PythonContextFn fn = python_context_provider.load(std::memory_order_acquire);
  return fn != nullptr ? fn() : kRootContext;
}

ThreadStage* LaunchStage::register_thread() {
  static std::atomic<uint32_t> next_index{1};
  auto* s = new ThreadStage();
  s->set_index(next_index.fetch_add(1, std::memory_order_relaxed));
  {
    std::lock_guard lock(g_stages_mu);
    stages().push_back(s);
  }
  tls_owner.stage = s;
  hot::this_thread().stage = s;
  return s;
}

void LaunchStage::scope_event(ContextId scope, bool enter) {
  SessionMask traced = active_sessions.load(std::memory_order_relaxed) &
                       trace_sessions.load(std::memory_order_relaxed);
  if (traced == 0) return;
  ThreadStage* s = hot::this_thread().stage;
  if (s == nullptr) [[unlikely]]
    s = register_thread();
  s->push(LaunchTag{0, traced, trace_clock(), scope, kRootContext, 0,
                    enter ? kTagScopeEnter : kTagScopeExit, 0, s->index()});
}

void LaunchStage::drain(const std::function<void(const LaunchTag&)>& fn) {
  std::lock_guard lock(g_stages_mu);
  auto& all = stages();
  for (ThreadStage*& s : all) {
    bool orphaned = s->orphaned.load(std::memory_order_acquire);
    s->drain(fn);
    if (orphaned) {
      delete s;
      s = nullptr;
    }
  }
  all.erase(std::remove_if(all.begin(), all.end(), [](ThreadStage* s) { return s == nullptr; }),
            all.end());
}

}  // namespace proton
