// Exposed communication: how much of each collective kernel's GPU time ran while no compute
// kernel ran on the same device. A summed metric on the collective's kernel node,
// "exposed_comm (ns)" (docs/advise.md, "comm_exposed").
//
// Kernel records arrive in buffers roughly in completion order, interleaved across streams, so
// a collective's record can come before the compute records that ran beside it. Per device the
// sweep holds each collective until no compute record that could overlap it is still to come,
// then subtracts the union of the compute intervals that overlap it. A collective ending at E is
// decided once
//   - every stream seen on its device has a record ending at or after E (kernels of one stream
//     run one after another, so that stream's later records start after E), or
//   - the device has a record ending a window (Limits::window_ns of GPU time) after E: a stream
//     quiet that long is taken to be idle, or
//   - flush() (the end of a flush, before a profile is written).
// Compute intervals are kept merged (their union, sorted) for a window behind the device's
// latest record, and longer while a waiting collective could meet them.
//
// The approximation errs one way: toward more exposed time, never less. A compute record that
// arrives after its collective was decided (a stream quiet for longer than the window, then a
// long kernel; a stream never seen before; records kept back past a flush) is not subtracted,
// and neither are compute records behind the watermark when a collective arrives that late.
// Exposed time is therefore an upper bound of the time the collective had the device to itself.
//
// On the record thread only (under the session's mu); no allocation per record once the
// device's buffers have grown; memory bounded by Limits (when they fill, the waiting
// collectives are decided early or the oldest compute is let go, both erring toward exposed).
#pragma once

#include <cstddef>
#include <cstdint>
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
  uint64_t window_ns = 20'000'000;  // GPU time a quiet stream may hold collectives back
  size_t max_waiting = 1024;        // collectives held per device
  size_t max_busy = 8192;           // merged compute intervals kept per device
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
  };
  struct Device {
    uint64_t key = 0;
    std::vector<StreamEnd> streams;
    uint64_t max_end = 0;
    uint64_t mark = 0;           // the watermark: collectives ending by it are decided
    uint64_t floor = 0;          // compute ending by it is let go: min(mark, waiting starts)
    std::vector<Interval> busy;  // merged compute, sorted; [busy_head, size) are live
    size_t busy_head = 0;
    std::vector<Waiting> waiting;  // collectives not yet decided
    uint64_t waiting_min_end = UINT64_MAX;
    uint64_t waiting_min_start = UINT64_MAX;
  };

  Device& device(uint64_t key);
  void note_stream(Device& d, uint32_t stream, uint64_t end_ns);
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
};

}  // namespace proton
