// Synthetic CUPTI activity buffers, laid out the way CUPTI lays them out: whole record structs
// back to back, each starting on an 8-byte boundary (the structs are declared packed with
// 8-byte alignment, so their sizes are multiples of 8). The fake cuptiActivityGetNextRecord
// walks them with the same contract as the real one.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

namespace proton::cupti::testing {

inline size_t record_size(const CUpti_Activity& r) {
  switch (r.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return sizeof(CUpti_ActivityGraphTrace2);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return sizeof(CUpti_ActivityAPI);
    default:
      return sizeof(CUpti_Activity);
  }
}

/// Same contract as cuptiActivityGetNextRecord. A zeroed kind marks a record CUPTI has not
/// finished writing (what a forced flush hands back for a kernel still running).
inline CUptiResult fake_next_record(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (buffer == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  size_t offset = 0;
  if (*record != nullptr) {
    offset =
        static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + record_size(**record);
  }
  if (offset >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  if (next->kind == CUPTI_ACTIVITY_KIND_INVALID) return CUPTI_ERROR_INVALID_KIND;
  *record = next;
  return CUPTI_SUCCESS;
}

/// Dropped-record counter behind the fake cuptiActivityGetNumDroppedRecords (read resets it).
inline std::atomic<size_t> g_fake_dropped{0};
inline CUptiResult fake_dropped_records(CUcontext, uint32_t, size_t* dropped) {
  *dropped = g_fake_dropped.exchange(0);
  return CUPTI_SUCCESS;
}

inline CUpti_ActivityKernel10 kernel(uint32_t correlation, const char* name, uint64_t start,
                                     uint64_t end) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = correlation;
  k.name = name;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.streamId = 7;
  return k;
}

/// An activity buffer under construction; storage is 8-byte aligned like CUPTI's.
class ActivityBuffer {
 public:
  template <typename Record>
  ActivityBuffer& add(const Record& r) {
    static_assert(sizeof(Record) % 8 == 0, "CUPTI records are 8-byte multiples");
    size_t at = used_;
    used_ += sizeof(Record);
    words_.resize((used_ + 7) / 8);
    std::memcpy(bytes() + at, &r, sizeof(Record));
    return *this;
  }
  /// Appends a record whose kind CUPTI has not written yet.
  ActivityBuffer& add_incomplete() {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof(k));
    return add(k);
  }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(words_.data()); }
  size_t size() const { return used_; }

 private:
  std::vector<uint64_t> words_;
  size_t used_ = 0;
};

}  // namespace proton::cupti::testing
