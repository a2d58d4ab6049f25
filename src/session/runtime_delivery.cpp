// What reaches the sessions from the GPU side, through one entry point whatever its kind: the
// record processor's batches (kernels, scope events, counters, PC samples, losses), each
// between begin_batch() and end_batch() with the sessions held, and the instrumentation
// runtime's regions. Each session hands a record to the collectors that take its kind.
#include <bit>

#include "session/runtime.h"

namespace proton {

void Runtime::begin_batch() {
  sessions_mu_.lock_shared();
}

void Runtime::end_batch() {
  // A session awaiting records held back in partly filled buffers asks for a flush, once per
  // batch at most (a few dozen pointer reads per buffer).
  bool wanted = false;
  for (const auto& s : sessions_)
    wanted |= s != nullptr && s->take_records_wanted();
  sessions_mu_.unlock_shared();
  if (wanted) processor_.request_flush();
}

void Runtime::deliver(SessionMask sessions, const Record& record) {
  // sessions_mu_ is held shared: the processor brackets its batch with begin/end_batch().
  for (; sessions != 0; sessions &= sessions - 1) {
    if (Session* s = sessions_[std::countr_zero(sessions)].get()) s->collect(record);
  }
}

void Runtime::deliver_outside_batch(SessionMask sessions, const Record& record) {
  std::shared_lock lock(sessions_mu_);
  deliver(sessions, record);
}

}  // namespace proton
