// The vendor border: CUPTI activity records become KernelRecords here, and only here, so that
// everything downstream is vendor-free. Everything is a plain function of its inputs, so the
// tests drive it with hand-built CUPTI structs and a fake cuptiActivityGetNextRecord.
#pragma once

#include <cupti.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attribution/kernel_record.h"
#include "common/ids.h"

namespace proton {
class RecordProcessor;
}

namespace proton::cupti {

using NextRecordFn = decltype(&::cuptiActivityGetNextRecord);
using DroppedRecordsFn = decltype(&::cuptiActivityGetNumDroppedRecords);

/// Interns kernel names by their CUPTI pointer. CUPTI shares one name string among all records
/// of the same kernel, so a pointer hit skips NameTable's mutex and hash; the pointer is
/// checked for equality, and the cache is cleared per buffer so a string freed by a module
/// unload cannot alias a later one for long.
class KernelNameCache {
 public:
  NameId intern(const char* name);
  void clear() { slots_.fill(Slot{}); }
  uint64_t misses() const { return misses_; }

 private:
  static constexpr size_t kSlots = 256;
  struct Slot {
    const char* key = nullptr;
    NameId id = kNoName;
  };
  std::array<Slot, kSlots> slots_{};
  uint64_t misses_ = 0;
};

/// What the running libcupti's kernel records hold beyond the fields every version we accept
/// has at the same place: the record struct is the newest libcupti knows, not the header's.
struct KernelLayout {
  bool clusters = false;  // clusterX/Y/Z (CUpti_ActivityKernel8 and later)
};
/// The layout of the kernel records a libcupti of this cuptiGetVersion writes.
KernelLayout kernel_layout_for(uint32_t cupti_version);

/// Translates one activity record. Returns false (leaving `out` alone) for kinds other than
/// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL / CUPTI_ACTIVITY_KIND_KERNEL. The launch facts are
/// read without a string or an allocation: a few words copied per record.
bool translate_kernel(const CUpti_Activity& record, KernelNameCache& names, KernelRecord& out,
                      KernelLayout layout = {});

/// Calls fn(const CUpti_Activity&) for each record of a completed buffer. Returns the status
/// that ended the walk: CUPTI_ERROR_MAX_LIMIT_REACHED is the normal end; CUPTI_ERROR_INVALID_KIND
/// means an incomplete record (a forced flush of a kernel still running) and the rest of the
/// buffer is unreadable.
template <typename Fn>
CUptiResult walk_records(NextRecordFn next, uint8_t* buffer, size_t valid_bytes, Fn&& fn) {
  if (buffer == nullptr || valid_bytes == 0) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  CUpti_Activity* record = nullptr;
  for (;;) {
    CUptiResult status = next(buffer, valid_bytes, &record);
    if (status != CUPTI_SUCCESS) return status;
    fn(static_cast<const CUpti_Activity&>(*record));
  }
}

struct BufferStats {
  size_t records = 0;  // records of any kind
  size_t kernels = 0;  // kernel records delivered
  size_t dropped = 0;  // records CUPTI reports lost since the previous buffer
  CUptiResult end = CUPTI_ERROR_MAX_LIMIT_REACHED;
};

/// Turns completed CUPTI buffers into KernelRecord batches for the RecordProcessor. Keeps its
/// batch vector between buffers, so steady state allocates nothing. Not thread-safe: the caller
/// serialises buffers (CUPTI may complete buffers on its thread and in a flushing thread).
class KernelBatcher {
 public:
  KernelBatcher(NextRecordFn next, DroppedRecordsFn dropped, KernelLayout layout = {})
      : next_(next), dropped_(dropped), layout_(layout) {}

  BufferStats deliver(uint8_t* buffer, size_t valid_bytes, RecordProcessor& processor);
  // Reads CUPTI's count of dropped records (reset on read) and reports it; returns the count.
  // Called with every buffer and once more after the last one: drops that happen after the
  // last buffer came back (all buffers lent out until the end) are counted by nothing else.
  size_t report_dropped(RecordProcessor& processor);

 private:
  NextRecordFn next_;
  DroppedRecordsFn dropped_;
  KernelLayout layout_;
  std::vector<KernelRecord> batch_;
  KernelNameCache names_;
};

}  // namespace proton::cupti
