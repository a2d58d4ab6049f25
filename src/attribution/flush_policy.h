// When the backend's periodic check hands partly filled activity buffers over.
//
// A launch's tag waits in the RecordProcessor until the buffer holding its kernel record is
// handed over. CUPTI hands a buffer over when it fills, so in the common case (one record per
// launch, ~4,800 per 1 MB buffer) tags never pile up. They do when records are sparse: one
// small record per graph launch in mode="graph", or a stream of launches whose kernels finish
// slowly. A plain cuptiActivityFlushAll hands partial buffers over, but it is not free: on an
// H100 a flush every 20 ms cost the launching thread 0.1-0.2 us per launch of a tight loop
// (bench floor_flush), so the backend checks every tick and flushes only when
//   - at least `tag_limit` tags are held (memory stays bounded: ~100 bytes per tag), or
//   - tags are held and neither a buffer nor a flush came for `idle_ns` (records of a quiet
//     program still arrive within a fraction of a second).
// tag_limit 0 flushes at every check that finds a tag held (the behaviour before the policy).
// Besides the policy, a consumer may ask for the next check's flush (RecordProcessor::
// request_flush: collectives awaiting the compute records beside them).
#pragma once

#include <cstdint>

namespace proton {

struct FlushPolicy {
  uint64_t tag_limit = 8192;       // two buffers' worth of one-record launches
  uint64_t idle_ns = 200'000'000;  // 200 ms

  /// `held`: tags waiting for kernels; `quiet_since`: the later of the last buffer handed over
  /// and the last flush (same clock as `now`).
  bool due(uint64_t held, uint64_t now, uint64_t quiet_since) const {
    if (held == 0) return false;
    if (tag_limit == 0 || held >= tag_limit) return true;
    return now >= quiet_since && now - quiet_since >= idle_ns;
  }
};

}  // namespace proton
