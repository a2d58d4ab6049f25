#include "backend/record_processor.h"

namespace proton {

void RecordProcessor::drain_tags() {
  LaunchStage::drain([this](const LaunchTag& tag) {
    tags_.insert_or_assign(tag.correlation, Pending{tag, tag.fanout});
  });
}

bool RecordProcessor::attribute(const KernelRecord& r) {
  auto it = tags_.find(r.correlation);
  if (it == tags_.end()) return false;
  sink_.deliver(it->second.tag.sessions, it->second.tag, r);
  if (it->second.remaining != 0 && --it->second.remaining == 0) tags_.erase(it);
  return true;
}

void RecordProcessor::unattributed(const KernelRecord& r) {
  SessionMask active = LaunchStage::active_sessions.load(std::memory_order_relaxed);
  if (active == 0) return;  // ran while every session was paused: nobody wants it
  ++stats_.unattributed;
  LaunchTag tag{};
  tag.correlation = r.correlation;
  tag.sessions = active;
  tag.fanout = 1;
  tag.flags = kTagUnattributed;
  sink_.deliver(tag.sessions, tag, r);
}

void RecordProcessor::process(std::span<const KernelRecord> records) {
  std::lock_guard lock(mu_);
  drain_tags();
  // Records that missed their tag in the previous batch get one more chance, then go to root.
  std::vector<KernelRecord> retry;
  retry.swap(waiting_);
  for (const KernelRecord& r : retry) {
    if (!attribute(r)) unattributed(r);
  }
  for (const KernelRecord& r : records) {
    ++stats_.records;
    if (!attribute(r)) waiting_.push_back(r);
  }
}

void RecordProcessor::report_dropped(uint64_t count) {
  if (count == 0) return;
  std::lock_guard lock(mu_);
  stats_.dropped += count;
  sink_.dropped(count);
}

void RecordProcessor::settle(bool forget_open_tags) {
  std::lock_guard lock(mu_);
  drain_tags();
  for (const KernelRecord& r : waiting_) {
    if (!attribute(r)) unattributed(r);
  }
  waiting_.clear();
  if (forget_open_tags) tags_.clear();
}

RecordProcessor::Stats RecordProcessor::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.pending_tags = tags_.size();
  s.waiting = waiting_.size();
  return s;
}

}  // namespace proton
