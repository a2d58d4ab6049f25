// One record on its way to the sessions, whatever its kind: a variant of references to the
// kind's own vendor-neutral struct (no copy, no allocation, no string per record). The record
// processor and the instrumentation runtime's sink hand every kind to the sessions through
// one entry point (RecordSink::deliver), and each session hands it to the collectors that take
// its kind (session/collectors.h). A new kind is one more alternative here and the collector
// that keeps it.
#pragma once

#include <cstdint>
#include <span>
#include <type_traits>
#include <variant>

#include "attribution/host_call.h"
#include "attribution/kernel_record.h"
#include "attribution/launch_stage.h"
#include "common/ids.h"
#include "data/counter_batch.h"
#include "data/pc_sample.h"
#include "data/region_metrics.h"

namespace proton {

/// A completed kernel and the launch it was attributed to.
struct KernelDone {
  const LaunchTag& tag;
  const KernelRecord& kernel;
};
/// A CPU scope opening, closing or given metrics on a traced thread (tag.flags has
/// kTagScopeEnter, kTagScopeExit or kTagScopeMetrics), in the thread's order with its launches.
struct ScopeEvent {
  const LaunchTag& tag;
};
/// Records the backend lost (a buffer overflow).
struct RecordsLost {
  uint64_t count = 0;
};
/// One drain of PC samples (mode="pcsampling").
struct PcSamples {
  const PcSampleBatch& batch;
};
/// Hardware-counter values per launch (mode="counters", the Range Profiler).
struct LaunchCounterValues {
  const LaunchCounters& batch;
};
/// Device-wide counter samples (mode="counters", PM sampling).
struct CounterSampleBatch {
  const CounterSamples& batch;
};
/// The intra-kernel regions of one decoded launch of `kernel` in context `ctx`: totals per
/// region (`units` = warps x CTAs of the launch) and, for sessions that keep a trace, spans.
struct LaunchRegions {
  ContextId ctx = kRootContext;
  NameId kernel = kNoName;
  std::span<const RegionTotals> totals;
  uint64_t units = 0;
  uint32_t device = 0;
  std::span<const RegionSpan> spans;
  LaunchSpan launch;
};

/// A host call that blocked its thread (a synchronize, a blocking or pageable copy), attributed
/// to the call path of the call (`tag`'s contexts and sessions; attribution/host_call.h).
struct HostCallDone {
  const LaunchTag& tag;
  const HostCall& call;
};

using Record = std::variant<KernelDone, ScopeEvent, RecordsLost, PcSamples, LaunchCounterValues,
                            CounterSampleBatch, LaunchRegions, HostCallDone>;

namespace detail {
template <typename T, typename V>
struct RecordIndex;
template <typename T, typename... Kinds>
struct RecordIndex<T, std::variant<Kinds...>> {
  static constexpr uint32_t value = [] {
    constexpr bool is[] = {std::is_same_v<T, Kinds>...};
    for (uint32_t i = 0; i < sizeof...(Kinds); ++i)
      if (is[i]) return i;
    return uint32_t{sizeof...(Kinds)};
  }();
  static_assert(value < sizeof...(Kinds), "not a kind of Record");
};
}  // namespace detail

/// The bit of kind T in a mask of record kinds (what a collector takes).
template <typename T>
constexpr uint32_t record_bit() {
  return uint32_t{1} << detail::RecordIndex<T, Record>::value;
}
/// The bit of the kind `record` holds.
inline uint32_t record_bit(const Record& record) {
  return uint32_t{1} << record.index();
}

/// A record for every session that collects its kind (the processor's PC and counter batches).
inline constexpr SessionMask kAllSessions = ~SessionMask{0};

}  // namespace proton
