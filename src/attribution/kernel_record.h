// The vendor-neutral record a backend turns each GPU activity record into.
//
// This is the vendor border: CUPTI (or ROCm) records become KernelRecords in one
// file of the backend, and everything downstream (correlation, attribution, aggregation,
// trace output) is vendor-free and testable with synthetic records.
#pragma once

#include <cstdint>

#include "common/ids.h"
#include "data/call_tree.h"
#include "data/launch_facts.h"

namespace proton {

struct KernelRecord {
  uint64_t correlation = 0;  // id of the host API call that launched it
  uint64_t start_ns = 0;     // GPU timestamps
  uint64_t end_ns = 0;
  NameId name = kNoName;  // interned kernel name
  uint32_t device_id = 0;
  uint32_t stream_id = 0;
  DeviceType device_type = DeviceType::kCuda;
  uint64_t graph_id = 0;       // 0 unless launched from a CUDA graph
  uint64_t graph_node_id = 0;  // node id inside that graph
  LaunchFacts launch;          // grid, block, registers, shared and local memory; zero if unknown
};

}  // namespace proton
