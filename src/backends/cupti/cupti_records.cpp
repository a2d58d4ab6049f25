#include "backends/cupti/cupti_records.h"

#include <cstddef>
#include <span>

#include "attribution/record_processor.h"
#include "backends/cupti/graph_records.h"
#include "common/name_table.h"

namespace proton::cupti {

// The record struct this header's CUPTI writes for CONCURRENT_KERNEL (CUDA 13: version 10).
using KernelActivity = CUpti_ActivityKernel10;

// We may run with an older libcupti than the headers (torch's wheels load libcupti.so.12,
// which writes CUpti_ActivityKernel9; CUDA 11.8 writes version 7). Reading the newest struct is
// safe only for fields that sit at the same offset in every version we accept; these do.
#define PROTON_SAME_OFFSET(field)                                                              \
  static_assert(offsetof(KernelActivity, field) == offsetof(CUpti_ActivityKernel7, field) &&   \
                    offsetof(KernelActivity, field) == offsetof(CUpti_ActivityKernel9, field), \
                "CUPTI moved " #field)
PROTON_SAME_OFFSET(kind);
PROTON_SAME_OFFSET(start);
PROTON_SAME_OFFSET(end);
PROTON_SAME_OFFSET(deviceId);
PROTON_SAME_OFFSET(streamId);
PROTON_SAME_OFFSET(correlationId);
PROTON_SAME_OFFSET(name);
PROTON_SAME_OFFSET(graphNodeId);
PROTON_SAME_OFFSET(graphId);
PROTON_SAME_OFFSET(gridX);
PROTON_SAME_OFFSET(gridY);
PROTON_SAME_OFFSET(gridZ);
PROTON_SAME_OFFSET(blockX);
PROTON_SAME_OFFSET(blockY);
PROTON_SAME_OFFSET(blockZ);
PROTON_SAME_OFFSET(registersPerThread);
PROTON_SAME_OFFSET(staticSharedMemory);
PROTON_SAME_OFFSET(dynamicSharedMemory);
PROTON_SAME_OFFSET(localMemoryPerThread);
#undef PROTON_SAME_OFFSET
// Cluster dimensions came with version 8 (for Hopper); version 7 ends before them, so they are
// read only from a libcupti known to write version 8 or later (KernelLayout).
#define PROTON_SAME_CLUSTER_OFFSET(field)                                                      \
  static_assert(offsetof(KernelActivity, field) == offsetof(CUpti_ActivityKernel8, field) &&   \
                    offsetof(KernelActivity, field) == offsetof(CUpti_ActivityKernel9, field), \
                "CUPTI moved " #field)
PROTON_SAME_CLUSTER_OFFSET(clusterX);
PROTON_SAME_CLUSTER_OFFSET(clusterY);
PROTON_SAME_CLUSTER_OFFSET(clusterZ);
#undef PROTON_SAME_CLUSTER_OFFSET

namespace {

// CUPTI's fields are signed ints; a negative value, or a dimension that does not fit 16 bits
// (never seen, but the record is outside input), reads as 0: not recorded.
uint32_t as_count(int32_t v) {
  return v > 0 ? static_cast<uint32_t>(v) : 0;
}
uint16_t as_dim(int64_t v) {
  return v > 0 && v <= 0xffff ? static_cast<uint16_t>(v) : 0;
}

void translate_launch(const KernelActivity& k, KernelLayout layout, LaunchFacts& out) {
  out.grid = {as_count(k.gridX), as_count(k.gridY), as_count(k.gridZ)};
  out.block = {as_dim(k.blockX), as_dim(k.blockY), as_dim(k.blockZ)};
  if (layout.clusters) {
    out.cluster = {as_dim(k.clusterX), as_dim(k.clusterY), as_dim(k.clusterZ)};
  } else {
    out.cluster = {};
  }
  out.registers_per_thread = k.registersPerThread;
  out.static_shared_bytes = as_count(k.staticSharedMemory);
  out.dynamic_shared_bytes = as_count(k.dynamicSharedMemory);
  out.local_bytes_per_thread = k.localMemoryPerThread;
}

}  // namespace

KernelLayout kernel_layout_for(uint32_t cupti_version) {
  // Version 19 is CUDA 12.0's CUPTI, which writes version 9 (the headers leave open whether
  // CUDA 11.8's, version 18, writes 7 or 8, so it gets none). CUDA 13's versions are 13xxyy.
  return KernelLayout{.clusters = cupti_version >= 19};
}

NameId KernelNameCache::intern(const char* name) {
  if (name == nullptr) name = "<unnamed kernel>";
  // Names are at least 8-aligned heap strings: drop the low bits, then Fibonacci-hash.
  auto key = reinterpret_cast<uintptr_t>(name);
  size_t slot = static_cast<size_t>(((key >> 3) * 0x9E3779B97F4A7C15ull) >> 56) % kSlots;
  Slot& s = slots_[slot];
  if (s.key == name) return s.id;
  ++misses_;
  s.key = name;
  s.id = NameTable::global().intern(name);
  return s.id;
}

bool translate_kernel(const CUpti_Activity& record, KernelNameCache& names, KernelRecord& out,
                      KernelLayout layout) {
  if (record.kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
      record.kind != CUPTI_ACTIVITY_KIND_KERNEL) {
    return false;
  }
  const auto& k = reinterpret_cast<const KernelActivity&>(record);
  out.correlation = k.correlationId;
  out.start_ns = k.start;
  // start == end == 0 means CUPTI had no device memory to time the kernel: it still ran, so
  // it is counted with zero time. An end before its start is clamped, never negative.
  out.end_ns = k.end < k.start ? k.start : k.end;
  out.name = names.intern(k.name);
  out.device_id = k.deviceId;
  out.stream_id = k.streamId;
  out.device_type = DeviceType::kCuda;
  out.graph_id = k.graphId;
  out.graph_node_id = k.graphNodeId;
  translate_launch(k, layout, out.launch);
  return true;
}

BufferStats KernelBatcher::deliver(uint8_t* buffer, size_t valid_bytes,
                                   RecordProcessor& processor) {
  BufferStats stats;
  batch_.clear();
  names_.clear();
  stats.end = walk_records(next_, buffer, valid_bytes, [&](const CUpti_Activity& record) {
    ++stats.records;
    KernelRecord r;
    if (translate_kernel(record, names_, r, layout_) ? keep_kernel_record(r)
                                                     : translate_graph_trace(record, r)) {
      batch_.push_back(r);
    }
  });
  stats.kernels = batch_.size();
  if (!batch_.empty()) processor.process(std::span<const KernelRecord>(batch_));
  stats.dropped = report_dropped(processor);
  return stats;
}

size_t KernelBatcher::report_dropped(RecordProcessor& processor) {
  // Dropped records are counted by CUPTI in its global queue (context NULL) and reset on read.
  size_t dropped = 0;
  if (dropped_ == nullptr || dropped_(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  if (dropped != 0) processor.report_dropped(dropped);
  return dropped;
}

}  // namespace proton::cupti
