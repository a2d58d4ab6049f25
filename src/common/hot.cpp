#include "common/hot.h"

#include <pthread.h>

namespace proton::hot {

constinit Globals globals;
constinit Thread thread_slots[kThreadSlots];

void Thread::reset() {
  tags = TagCursor{};
  nest_correlation = 0;
  nest_op = 0;
  nest_epoch = 0;
  nest_depth = 0;
  effective = kRootContext;
  pending_op = 0;
  attached = false;
  exit_work = 0;
}

namespace {

// Gives the slot back when the thread exits. Thread-local destructors that run after this one
// (and call this_thread()) miss the slot and, having tried once already, get the fallback: the
// slot may already belong to a new thread.
struct SlotRelease {
  Thread* slot = nullptr;
  ~SlotRelease();
};

constinit thread_local bool tls_tried = false;  // the thread has tried to claim its slot
constinit thread_local Thread tls_fallback;
thread_local SlotRelease tls_release;

SlotRelease::~SlotRelease() {
  if (slot != nullptr) slot->owner.store(0, std::memory_order_release);
}

// In a forked child only the forking thread lives on: the slots of the others must not be
// found by new threads that happen to get their thread pointers back.
void forget_other_threads() {
  uintptr_t self = thread_pointer();
  for (Thread& t : thread_slots) {
    uintptr_t owner = t.owner.load(std::memory_order_relaxed);
    if (owner != 0 && owner != self) t.owner.store(0, std::memory_order_relaxed);
  }
}

}  // namespace

Thread& this_thread_slow() noexcept {
  if (!tls_tried) {
    [[maybe_unused]] static const bool at_fork =
        pthread_atfork(nullptr, nullptr, forget_other_threads) == 0;
    tls_tried = true;
    uintptr_t tp = thread_pointer();
    if (tp != 0) {
      Thread& slot = thread_slots[slot_of(tp)];
      uintptr_t expected = 0;
      if (slot.owner.compare_exchange_strong(expected, tp, std::memory_order_acquire)) {
        slot.reset();
        tls_release.slot = &slot;
        return slot;
      }
    }
  }
  return tls_fallback;
}

size_t claimed_thread_slots() noexcept {
  size_t n = 0;
  for (const Thread& t : thread_slots)
    n += t.owner.load(std::memory_order_relaxed) != 0 ? 1 : 0;
  return n;
}

}  // namespace proton::hot
