// Exposed communication: how much of each collective kernel's GPU time ran while no compute
// kernel ran on the same device. A summed metric on the collective's kernel node,
// "exposed_comm (ns)" (docs/advise.md, "comm_exposed").
//
// Kernel records do not arrive in GPU-time order, not even per stream: CUPTI fills a buffer per
// launching thread and hands each over when it fills, so the records of a training step's
// backward pass (launched by the autograd thread, NCCL's collectives among them) came ~50-120 ms
// of GPU time after those the main thread launched beside them, on the same stream (a DDP
// step loop on an H100). Per device the sweep therefore holds each collective, and keeps the
// union of the compute intervals (merged, sorted), for a window of GPU time: a collective ending
// at E is decided, with the compute union over it subtracted, once
//   - the device has a record ending Limits::window_ns after E (records later than that are
//     taken to be absent), or
//   - flush() (the end of a flush, before a profile is written),
// and compute is let go once it ends a window behind the device's latest record and before
// every waiting collective starts.
//
// A thread that launches rarely fills its buffer slowly. So the sweep asks for a flush
// (take_flush_wanted(): the backend's periodic check hands partly filled buffers over) when a
// waiting collective, or a stream that carried collectives, is flush_lag_ns behind the device's
// latest record, at most once per flush_lag_ns of GPU time per device: the records that flush
// brings come within the window.
//
// The approximation errs one way: toward more exposed time, never less. A compute record that
// arrives after its collective was decided (records kept back longer than the window, or past a
// flush) is not subtracted, and neither are compute records behind the watermark when a
// collective arrives that late. Exposed time is therefore an upper bound of the time the
// collective had the device to itself.
//
// On the record thread only (under the session's mu); no allocation per record once the
// device's buffers have grown; memory bounded by Limits (when they fill, the waiting
// collectives are decided early or the oldest compute is let go, both erring toward exposed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/ids.h"

namespace proton {

/// Where a collective's exposed time goes: opaque to the sweep (the session's phase and node,
/// and the node's name to check it still stands for the kernel).
struct CommSite {
  uint32_t phase = 0;
  uint32_t node = 0;
  NameId name = kNoName;
};
/// What one device may hold (CommOverlap).
struct CommLimits {
  uint64_t window_ns = 250'000'000;    // GPU time a record may come late
  uint64_t flush_lag_ns = 50'000'000;  // GPU time behind that asks for a flush
  size_t max_waiting = 1024;           // collectives held per device
  size_t max_busy = 32768;             // merged compute intervals kept per device (512 KB)
};

class CommOverlap {
 public:
  using Site = CommSite;
  using Limits = CommLimits;
  /// One decided collective.
  struct Exposed {
    Site site;
    uint64_t comm_ns = 0;
    uint64_t exposed_ns = 0;
  };
  CommOverlap() : CommOverlap(Limits{}) {}
  explicit CommOverlap(Limits limits) : limits_(limits) {}

  /// A kernel of `device` (a key: the caller folds the device type in) on `stream`. `comm`: a
  /// collective (is_comm_kernel), whose exposed time is due at `site`. Decided collectives
  /// wait in ready().
  void add(uint64_t device, uint32_t stream, uint64_t start_ns, uint64_t end_ns, bool comm,
           const Site& site = {});
  /// Decides every waiting collective with the compute seen so far.
  void flush();
  /// Collectives decided since the caller last cleared it.
  std::vector<Exposed>& ready() { return ready_; }
  /// Drops everything held (data.clear).
  void clear();
  /// Whether records held back in partly filled buffers are awaited (see above); reading it
  /// clears it.
  bool take_flush_wanted() { return std::exchange(flush_wanted_, false); }

  /// Collectives that arrived behind their device's watermark: compute records already let go
  /// may have overlapped them.
  uint64_t late() const { return late_; }
  /// Times a device's limits were full (the oldest waiting collectives decided early, or the
  /// oldest compute intervals let go).
  /// Compute intervals and collectives held over all devices.
  size_t held() const;
  uint64_t forced() const { return forced_; }

  /// format::is_collective_kernel of an interned name, remembered per name (the record
  /// thread's only cost per kernel is a vector lookup).
  bool is_comm(NameId name);

 private:
  struct Interval {
    uint64_t start = 0;
    uint64_t end = 0;
  };
  struct Waiting {
    Interval span;
    Site site;
  };
  struct StreamEnd {
    uint32_t stream = 0;
    uint64_t end = 0;
    bool comm = false;  // has carried a collective
  };
  struct Device {
    uint64_t key = 0;
    std::vector<StreamEnd> streams;
    uint64_t max_end = 0;
    uint64_t mark = 0;           // the watermark, max_end - window: collectives ending by it
                                 // are decided
    uint64_t floor = 0;          // compute ending by it is let go: min(mark, waiting starts)
    std::vector<Interval> busy;  // merged compute, sorted; [busy_head, size) are live
    size_t busy_head = 0;
    std::vector<Waiting> waiting;  // collectives not yet decided
    uint64_t waiting_min_end = UINT64_MAX;
    uint64_t waiting_min_start = UINT64_MAX;
    uint64_t asked_at = 0;   // max_end when this device last asked for a flush
    bool comm_seen = false;  // some stream of it has carried a collective
  };

  Device& device(uint64_t key);
  void note_stream(Device& d, uint32_t stream, uint64_t end_ns, bool comm);
  void ask_for_records(Device& d);
  void add_busy(Device& d, Interval iv);
  void decide(Device& d, bool all);
  void decide_one(Device& d, const Waiting& w);
  void prune(Device& d);

  Limits limits_;
  std::vector<Device> devices_;
  size_t last_device_ = 0;
  std::vector<Exposed> ready_;
  std::vector<uint8_t> names_;  // NameId -> 0 unknown, 1 collective, 2 not
  uint64_t late_ = 0;
  uint64_t forced_ = 0;
  bool flush_wanted_ = false;
};

}  // namespace proton
