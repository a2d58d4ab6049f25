#include "attribution/launch_stage.h"

#include <algorithm>

#include "attribution/host_call.h"

namespace proton {

ThreadStage::ThreadStage() : first_(new TagBlock(this)), head_(first_) {}

ThreadStage::~ThreadStage() {
  for (TagBlock* b = head_; b != nullptr;) {
    TagBlock* next = b->next.load(std::memory_order_relaxed);
    delete b;
    b = next;
  }
  for (TagBlock* b = free_.load(std::memory_order_relaxed); b != nullptr;) {
    TagBlock* next = b->next.load(std::memory_order_relaxed);
    delete b;
    b = next;
  }
}

TagBlock* ThreadStage::next_block(TagBlock* full) {
  TagBlock* b = free_.load(std::memory_order_acquire);
  while (b != nullptr &&
         !free_.compare_exchange_weak(b, b->next.load(std::memory_order_relaxed),
                                      std::memory_order_acquire, std::memory_order_acquire)) {
  }
  if (b == nullptr) {
    b = new TagBlock(this);  // warm-up only: drained blocks come back through free_
  } else {
    b->count.store(0, std::memory_order_relaxed);
    b->next.store(nullptr, std::memory_order_relaxed);
  }
  full->next.store(b, std::memory_order_release);
  return b;
}

void ThreadStage::recycle(TagBlock* b) {
  TagBlock* top = free_.load(std::memory_order_relaxed);
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

void LaunchStage::register_thread(hot::Thread& self) {
  static std::atomic<uint32_t> next_index{1};
  auto* s = new ThreadStage();
  {
    std::lock_guard lock(g_stages_mu);
    stages().push_back(s);
  }
  tls_owner.stage = s;
  self.tags = s->start(next_index.fetch_add(1, std::memory_order_relaxed));
}

void LaunchStage::scope_event(ContextId scope, bool enter) {
  SessionMask traced = active_sessions.load(std::memory_order_relaxed) &
                       trace_sessions.load(std::memory_order_relaxed);
  if (traced == 0) return;
  hot::Thread& self = hot::this_thread();
  if (self.tags.block == nullptr) [[unlikely]]
    register_thread(self);
  ThreadStage::push(self.tags,
                    LaunchTag{0, traced, trace_clock(), scope, kRootContext, 0,
                              enter ? kTagScopeEnter : kTagScopeExit, 0, self.tags.thread});
}

bool LaunchStage::scope_metrics(ContextId scope, uint32_t set) {
  SessionMask traced = active_sessions.load(std::memory_order_relaxed) &
                       trace_sessions.load(std::memory_order_relaxed);
  if (traced == 0) return false;
  hot::Thread& self = hot::this_thread();
  if (self.tags.block == nullptr) [[unlikely]]
    register_thread(self);
  ThreadStage::push(self.tags, LaunchTag{0, traced, trace_clock(), scope, kRootContext, 0,
                                         kTagScopeMetrics, set, self.tags.thread});
  return true;
}

void LaunchStage::host_call(const HostCall& call) {
  SessionMask active = active_sessions.load(std::memory_order_relaxed);
  if (active == 0) return;
  hot::Thread& self = hot::this_thread();
  if (self.tags.block == nullptr) [[unlikely]]
    register_thread(self);
  LaunchTag tag = host_call_tag(call);
  tag.sessions = active;
  tag.context = ThreadContext::launch_context(self);
  if ((active & python_sessions.load(std::memory_order_relaxed)) != 0) {
    tag.python_context = python_context();
  }
  tag.thread = self.tags.thread;
  ThreadStage::push(self.tags, tag);
}

namespace {
thread_local uint32_t tls_profiler_calls = 0;  // ProfilerHostCalls alive on this thread
}  // namespace

void ProfilerHostCalls::begin() noexcept {
  ++tls_profiler_calls;
}
void ProfilerHostCalls::end() noexcept {
  if (tls_profiler_calls != 0) --tls_profiler_calls;
}
bool ProfilerHostCalls::active() noexcept {
  return tls_profiler_calls != 0;
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
