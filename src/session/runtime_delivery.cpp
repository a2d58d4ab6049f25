// What reaches the sessions from the GPU side: the record processor's batches (kernels, scope
// events, counters, PC samples, losses), each between begin_batch() and end_batch() with the
// sessions held, and the instrumentation runtime's regions.
#include <bit>

#include "attribution/launch_stage.h"
#include "session/runtime.h"

namespace proton {

void Runtime::begin_batch() {
  sessions_mu_.lock_shared();
}

void Runtime::end_batch() {
  sessions_mu_.unlock_shared();
}

void Runtime::deliver(SessionMask sessions, const LaunchTag& tag, const KernelRecord& r) {
  // sessions_mu_ is held shared: the processor brackets its batch with begin/end_batch().
  for (; sessions != 0; sessions &= sessions - 1) {
    if (Session* s = sessions_[std::countr_zero(sessions)].get()) s->add_kernel(tag, r);
  }
}

void Runtime::scope_event(const LaunchTag& tag) {
  // sessions_mu_ is held shared (a processor batch).
  for (SessionMask m = tag.sessions; m != 0; m &= m - 1) {
    if (Session* s = sessions_[std::countr_zero(m)].get()) s->add_scope_event(tag);
  }
}

void Runtime::counters(const LaunchCounters& batch) {
  // sessions_mu_ is held shared (a processor batch). Values go to every counters session: the
  // join keeps only those whose kernels the session received.
  for (auto& s : sessions_) {
    if (s && s->counters_enabled()) s->add_counters(batch);
  }
}

void Runtime::counter_samples(const CounterSamples& batch) {
  for (auto& s : sessions_) {
    if (s && s->counters_enabled()) s->add_counter_samples(batch);
  }
}

void Runtime::dropped(uint64_t count) {
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_acquire);
  // sessions_mu_ is held shared (a processor batch).
  for (; active != 0; active &= active - 1) {
    Session* s = sessions_[std::countr_zero(active)].get();
    if (s == nullptr) continue;
    std::lock_guard session_lock(s->mu);
    s->dropped_records += count;
  }
}

void Runtime::add_regions(SessionMask sessions, ContextId ctx, NameId kernel,
                          std::span<const RegionTotals> regions, uint64_t units, uint32_t device_id,
                          std::span<const RegionSpan> spans, LaunchSpan launch) {
  std::shared_lock lock(sessions_mu_);
  for (; sessions != 0; sessions &= sessions - 1) {
    Session* s = sessions_[std::countr_zero(sessions)].get();
    if (s == nullptr) continue;
    {
      std::lock_guard session_lock(s->mu);
      CallTree& tree = s->tree();
      CallTree::NodeId node = tree.child(tree.node_for_context(ctx), kernel);
      try {
        add_region_totals(tree, node, regions, units, device_id, DeviceType::kCuda);
      } catch (const MetricTypeError&) {
        // A user metric named "cycles" of another type: never let it stop delivery.
      }
    }
    if (!spans.empty()) s->add_region_spans(ctx, kernel, device_id, spans, launch);
  }
}

void Runtime::pc_samples(const PcSampleBatch& batch) {
  // Called by the processor between begin_batch() and end_batch() (sessions_mu_ held shared).
  for (auto& s : sessions_) {
    if (s && s->pc_sampling()) s->add_pc_samples(batch);
  }
}

}  // namespace proton
