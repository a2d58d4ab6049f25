// Attributes completed kernel records to the contexts that launched them.
//
// Runs on whatever thread the backend delivers records from (CUPTI's buffer-completion
// thread, or the thread that calls flush). Before each batch it drains every thread's launch
// tags into a correlation map; a record whose tag is found goes to the sessions and context
// recorded at launch time. One tag can serve several records (a graph launch fans out to
// many kernels): the tag says how many to expect, and 0 means "until cleared".
//
// A record whose tag is not there yet is kept and retried with the next batch (tags are
// pushed before the launch, so this only happens when the launch was not intercepted); if
// still unmatched, or at settle(), it is attributed to the root of the active sessions and
// counted as unattributed.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/kernel_record.h"
#include "backend/launch_stage.h"

namespace proton {

/// Where attributed records go (implemented by the session layer; tests use fakes).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void deliver(SessionMask sessions, const LaunchTag& tag, const KernelRecord& r) = 0;
  /// Records the backend lost (buffer overflow), reported to every active session.
  virtual void dropped(uint64_t count) = 0;
};

class RecordProcessor {
 public:
  struct Stats {
    uint64_t records = 0;       // records processed
    uint64_t unattributed = 0;  // records with no launch tag
    uint64_t dropped = 0;       // reported lost by the backend
    uint64_t pending_tags = 0;  // launches still waiting for kernels
    uint64_t waiting = 0;       // records waiting for a tag
  };

  explicit RecordProcessor(RecordSink& sink) : sink_(sink) {}

  /// Attributes one batch. Thread-safe; batches are serialised.
  void process(std::span<const KernelRecord> records);
  void report_dropped(uint64_t count);
  /// Attributes every waiting record (end of a flush) and forgets tags that expect an
  /// unknown number of kernels only if `forget_open_tags`.
  void settle(bool forget_open_tags = false);
  Stats stats() const;

 private:
  struct Pending {
    LaunchTag tag;
    uint32_t remaining;  // 0 = unknown fan-out: kept until settle(true)
  };
  void drain_tags();                         // requires mu_
  bool attribute(const KernelRecord& r);     // requires mu_
  void unattributed(const KernelRecord& r);  // requires mu_

  RecordSink& sink_;
  mutable std::mutex mu_;  // guards everything below; never held while calling user code
  std::unordered_map<uint64_t, Pending> tags_;  // correlation -> launch tag
  std::vector<KernelRecord> waiting_;           // records seen before their tag
  Stats stats_;
};

}  // namespace proton
