// What a session does with the records it is handed, one collector per concern: the call tree
// and its phases (kernels, the session's counts of lost and unattributed records), intra-kernel
// region totals, PC attribution, hardware counters, the trace. A session holds the collectors
// its options ask for and hands each record to those that take its kind (Session::collect),
// under Session::mu, in the order above: the tree places a kernel first, and the PC and
// counter collectors hang their data on its node. The data stays the session's; a collector
// is the code that keeps one concern of it.
#pragma once

#include <cstdint>

#include "attribution/record.h"

namespace proton {

class Session;

class Collector {
 public:
  /// `kinds`: the record kinds it takes (record_bit<T>() of each).
  Collector(Session& session, uint32_t kinds) : session_(session), kinds_(kinds) {}
  virtual ~Collector() = default;
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  uint32_t kinds() const { return kinds_; }
  /// One record of a kind it takes (requires the session's mu).
  virtual void collect(const Record& record) = 0;

 protected:
  Session& session_;

 private:
  const uint32_t kinds_;
};

/// Kernels on the call tree of their launch's phase (renamed and given metrics by their launch
/// op), host calls that blocked (a child of their call path per kind: host_call_frame), and the
/// session's counts of unattributed kernels and lost records. Every session.
class TreeCollector final : public Collector {
 public:
  explicit TreeCollector(Session& s);
  void collect(const Record& record) override;

 private:
  void add_host_call(const HostCallDone& done);
};

/// The frame a host call's metrics go on, below its call path: "cudaStreamSynchronize",
/// "cudaDeviceSynchronize", "cudaEventSynchronize", or "memcpy <direction> (pageable)" /
/// "memcpy <direction> (blocking)" (docs/advise.md, "Host calls").
const char* host_call_frame(const HostCall& call);

/// Intra-kernel region totals below the kernel's node of the launch's context. Every session
/// (a launch's regions go to the sessions active when it ran).
class RegionCollector final : public Collector {
 public:
  explicit RegionCollector(Session& s);
  void collect(const Record& record) override;
};

/// PC samples under the kernels that ran them (mode="pcsampling").
class PcCollector final : public Collector {
 public:
  explicit PcCollector(Session& s);
  void collect(const Record& record) override;
};

/// Hardware counters (mode="counters"): Range-Profiler values joined with their kernels, PM
/// samples split over the kernels that ran in them and kept for counter tracks.
class CounterCollector final : public Collector {
 public:
  explicit CounterCollector(Session& s);
  void collect(const Record& record) override;
};

/// The timeline (data="trace"): kernels, CPU scopes, region spans placed in their kernel's box.
class TraceCollector final : public Collector {
 public:
  explicit TraceCollector(Session& s);
  void collect(const Record& record) override;
};

}  // namespace proton
