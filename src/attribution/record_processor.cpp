#include "attribution/record_processor.h"

#include <algorithm>

#include "context/scope_metric_sets.h"

namespace proton {

void RecordProcessor::drain_tags() {
  // Taken before draining: a launch reports its capture after staging its tag, so every
  // captured launch named here has its tag in the drain below.
  graphs_.take_captured(captured_);
  uint32_t epoch = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
  uint32_t stamp = (epoch & kTagEpochMask) << kTagEpochShift;
  LaunchStage::drain([&](const LaunchTag& staged) {
    LaunchTag tag = staged;
    tag.flags |= stamp;
    if (tag.flags & (kTagScopeEnter | kTagScopeExit | kTagScopeMetrics)) {
      sink_.deliver(tag.sessions, ScopeEvent{tag});
      // The staged reference: every trace that keeps the metrics took its own.
      if (tag.flags & kTagScopeMetrics) ScopeMetricSets::global().release(tag.op);
      return;
    }
    if (tag.flags & kTagHostCall) {
      HostCall call = host_call_of(tag);
      sink_.deliver(tag.sessions, HostCallDone{tag, call});
      return;
    }
    auto [item, inserted] = tags_.try_emplace(tag.correlation, Pending{tag, tag.fanout});
    if (!inserted) {  // a correlation id reused before its kernels came: the old tag is done
      if (item->value.remaining != 0) close_one(tag_epoch(item->value.tag));
      item->value = Pending{tag, tag.fanout};
    }
    if (tag.fanout == 0) {
      uint64_t evicted = graphs_.track_unknown(tag.correlation);
      auto* old = evicted != 0 ? tags_.find(evicted) : nullptr;
      if (old != nullptr && old->value.remaining == 0 && old->value.graph == 0) {
        tags_.erase(old);  // no graph record ever claimed it: a graph without kernels
      }
      return;
    }
    if (open_epochs_.empty() || open_epochs_.back().first != epoch) {
      open_epochs_.emplace_back(epoch, 0);
    }
    ++open_epochs_.back().second;
  });
  for (uint64_t correlation : captured_)
    retire(correlation);
  captured_.clear();
}

void RecordProcessor::retire(uint64_t correlation) {
  auto* item = tags_.find(correlation);
  if (item == nullptr) return;
  if (item->value.remaining != 0) close_one(tag_epoch(item->value.tag));
  tags_.erase(item);
}

void RecordProcessor::close_one(uint32_t epoch) {
  // Stamps are epochs mod 2^24; the open list is short (epochs with kernels in flight).
  for (auto& [e, open] : open_epochs_) {
    if ((e & kTagEpochMask) == epoch && open != 0) {
      --open;
      break;
    }
  }
  while (!open_epochs_.empty() && open_epochs_.front().second == 0) {
    open_epochs_.erase(open_epochs_.begin());
  }
}

uint32_t RecordProcessor::oldest_open_epoch() const {
  std::lock_guard lock(mu_);
  uint32_t current = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
  uint32_t oldest = open_epochs_.empty() ? current : open_epochs_.front().first;
  return std::max(oldest, settled_epoch_);
}

bool RecordProcessor::attribute(const KernelRecord& r) {
  auto* item = tags_.find(r.correlation);
  if (item == nullptr) return false;
  Pending& pending = item->value;  // the sink and graphs_ below never touch tags_
  uint64_t stale = 0;
  if (r.graph_id == 0 && r.graph_node_id == 0) {
    sink_.deliver(pending.tag.sessions, KernelDone{pending.tag, r});
  } else {
    LaunchTag replay = graphs_.replay_tag(pending.tag, r);
    sink_.deliver(replay.sessions, KernelDone{replay, r});
    if (r.graph_id != 0) {
      pending.graph = static_cast<uint32_t>(r.graph_id);
      stale = graphs_.launch_seen(pending.graph, r.correlation);
    }
  }
  if (pending.remaining != 0 && --pending.remaining == 0) {
    close_one(tag_epoch(pending.tag));
    tags_.erase(item);
  }
  if (stale != 0) retire(stale);
  return true;
}

void RecordProcessor::paused(uint64_t at_ns) {
  std::lock_guard lock(mu_);
  if (!pauses_.empty() && pauses_.back().second == UINT64_MAX) return;  // paused already
  if (pauses_.size() == kPausesKept) pauses_.pop_front();
  pauses_.emplace_back(at_ns, UINT64_MAX);
}

void RecordProcessor::resumed(uint64_t at_ns) {
  std::lock_guard lock(mu_);
  if (!pauses_.empty() && pauses_.back().second == UINT64_MAX) pauses_.back().second = at_ns;
}

bool RecordProcessor::in_pause(uint64_t start_ns) const {
  for (const auto& [from, to] : pauses_)
    if (start_ns >= from && start_ns < to) return true;
  return false;
}

void RecordProcessor::unattributed(const KernelRecord& r) {
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_relaxed);
  // Ran while every session was paused (no launch is tagged then): nobody wants it, also when
  // its record comes after a session resumed.
  if (active == 0 || in_pause(r.start_ns)) return;
  ++stats_.unattributed;
  LaunchTag tag{};
  tag.correlation = r.correlation;
  tag.sessions = active;
  tag.fanout = 1;
  tag.flags =
      kTagUnattributed | (LaunchStage::phase_epoch.load(std::memory_order_relaxed) & kTagEpochMask)
                             << kTagEpochShift;
  sink_.deliver(tag.sessions, KernelDone{tag, r});
}

void RecordProcessor::process(std::span<const KernelRecord> records) {
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  drain_tags();
  // Records that missed their tag in the previous batch get one more chance, then go to root.
  retry_.swap(waiting_);  // both keep their capacity: no allocation per batch
  for (const KernelRecord& r : retry_) {
    if (!attribute(r)) unattributed(r);
  }
  retry_.clear();
  for (const KernelRecord& r : records) {
    ++stats_.records;
    if (!attribute(r)) waiting_.push_back(r);
  }
}

void RecordProcessor::report_dropped(uint64_t count) {
  if (count == 0) return;
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  stats_.dropped += count;
  sink_.deliver(LaunchStage::active_sessions.load(std::memory_order_acquire), RecordsLost{count});
}

void RecordProcessor::settle(bool forget_open_tags) {
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  drain_tags();
  for (const KernelRecord& r : waiting_) {
    if (!attribute(r)) unattributed(r);
  }
  waiting_.clear();
  // A flush waits for the GPU, so every launch staged before it has been delivered; tags still
  // open (a launch that produced no kernel) must not hold their phase open forever.
  settled_epoch_ = LaunchStage::phase_epoch.load(std::memory_order_relaxed);
  while (!open_epochs_.empty() && open_epochs_.front().first < settled_epoch_) {
    open_epochs_.erase(open_epochs_.begin());
  }
  graphs_.settle();
  if (forget_open_tags) {
    tags_.reset();  // the backend stopped: give back what a burst of launches grew
    open_epochs_.clear();
    graphs_.forget_launches();
  }
}

void RecordProcessor::forget_session(SessionId id) {
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  drain_tags();
  tags_.for_each(
      [&](uint64_t, Pending& pending) { pending.tag.sessions &= ~(SessionMask{1} << id); });
}

size_t RecordProcessor::held_tags() {
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  drain_tags();
  return tags_.size();
}

RecordProcessor::Stats RecordProcessor::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.pending_tags = tags_.size();
  s.waiting = waiting_.size();
  return s;
}

// PC samples and hardware counters: decoded by the backend off the launching threads,
// attributed by the sessions (by kernel time so far, or joined with kernels by correlation:
// data/pc_attribution.h, data/counter_join.h).
void RecordProcessor::deliver(const Record& record, SessionMask sessions) {
  std::lock_guard lock(mu_);
  SinkBatch batch(sink_);
  sink_.deliver(sessions, record);
}

}  // namespace proton
