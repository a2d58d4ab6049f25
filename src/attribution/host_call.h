// A host call that blocked the calling thread: a stream, device or event synchronize, or a copy
// that did not return at once (a synchronous copy, or an asynchronous one touching pageable host
// memory). Backends time these rare calls at API enter and exit and stage them in the calling
// thread's tag queue (LaunchStage::host_call), in order with its launches; the record processor
// hands each to the sessions as a HostCallDone record, attributed to the call path of the call.
//
// A host call travels as a LaunchTag flagged kTagHostCall: the queue then needs no second kind of
// entry, and phases, sessions and contexts work as for launches. The fields are packed below.
#pragma once

#include <cstdint>

#include "attribution/launch_stage.h"

namespace proton {

enum class HostCallKind : uint8_t {
  kStreamSync = 0,  // cudaStreamSynchronize, cuStreamSynchronize
  kDeviceSync = 1,  // cudaDeviceSynchronize, cuCtxSynchronize
  kEventSync = 2,   // cudaEventSynchronize, cuEventSynchronize
  kCopy = 3,        // cudaMemcpy*, cuMemcpy* (1D)
};

enum class CopyDirection : uint8_t { kUnknown = 0, kHtoD = 1, kDtoH = 2, kDtoD = 3, kHtoH = 4 };

/// The host side of a copy: pinned (page-locked, or registered) memory the GPU reads directly,
/// or pageable memory the driver stages through a pinned buffer of its own, synchronously.
enum class HostMemory : uint8_t { kNone = 0, kPinned = 1, kPageable = 2 };

struct HostCall {
  HostCallKind kind = HostCallKind::kStreamSync;
  CopyDirection direction = CopyDirection::kUnknown;  // copies only
  HostMemory memory = HostMemory::kNone;              // copies only
  // A stream synchronize that came right after a timed copy on the same stream, with no launch
  // between (a framework's copy-then-wait, such as PyTorch's blocking tensor.cuda()): its time
  // is the copy's, added to the copy as time without a new call.
  bool continued = false;
  uint64_t start_ns = 0;     // steady clock
  uint64_t duration_ns = 0;  // host time inside the call (at most 2^48 - 1 ns, ~78 hours)
  uint64_t bytes = 0;        // copies only
};

/// LaunchTag::flags: a host call (host_call_of reads it), not a launch.
inline constexpr uint32_t kTagHostCall = 16;

/// The host call a kTagHostCall tag carries. Layout: correlation = bytes, cpu_ns = start,
/// fanout = duration's low 32 bits, op = kind (bits 0-1), direction (2-4), memory (5-6),
/// continued (7), duration's next 16 bits (16-31).
inline HostCall host_call_of(const LaunchTag& tag) {
  HostCall c;
  c.kind = static_cast<HostCallKind>(tag.op & 3u);
  c.direction = static_cast<CopyDirection>((tag.op >> 2) & 7u);
  c.memory = static_cast<HostMemory>((tag.op >> 5) & 3u);
  c.continued = ((tag.op >> 7) & 1u) != 0;
  c.start_ns = tag.cpu_ns;
  c.duration_ns = uint64_t{tag.fanout} | (uint64_t{tag.op >> 16} << 32);
  c.bytes = tag.correlation;
  return c;
}

/// The tag fields that carry `call` (host_call_of's inverse); the caller fills sessions,
/// contexts and thread.
inline LaunchTag host_call_tag(const HostCall& call) {
  constexpr uint64_t kMaxDuration = (uint64_t{1} << 48) - 1;
  uint64_t d = call.duration_ns < kMaxDuration ? call.duration_ns : kMaxDuration;
  LaunchTag t{};
  t.correlation = call.bytes;
  t.cpu_ns = call.start_ns;
  t.fanout = static_cast<uint32_t>(d);
  t.flags = kTagHostCall;
  t.op = static_cast<uint32_t>(call.kind) | static_cast<uint32_t>(call.direction) << 2 |
         static_cast<uint32_t>(call.memory) << 5 | (call.continued ? 1u : 0u) << 7 |
         static_cast<uint32_t>(d >> 32) << 16;
  return t;
}

/// While one is alive on a thread, that thread's host calls are the profiler's own (a flush's
/// context synchronize, the instrumentation consumer's event waits) and are not timed.
class ProfilerHostCalls {
 public:
  ProfilerHostCalls() { begin(); }
  ~ProfilerHostCalls() { end(); }
  ProfilerHostCalls(const ProfilerHostCalls&) = delete;
  ProfilerHostCalls& operator=(const ProfilerHostCalls&) = delete;
  /// The same without a scope (the Python layer's read-back of device metrics): each begin()
  /// on a thread needs its end() on that thread.
  static void begin() noexcept;
  static void end() noexcept;
  /// True while the calling thread is inside one.
  static bool active() noexcept;
};

}  // namespace proton
