// The border of PC sampling: CUPTI's parsed PC records become our PcSamples (data/pc_sample.h).
//
// CUPTI fills a CUpti_PCSamplingData we allocated; nothing in it is trusted beyond what we
// allocated: counts are clamped to our capacities, unknown stall-reason indices and records
// without a function name are counted and skipped. The function-name strings belong to CUPTI
// and are shared between records (freeing one per record double-frees): we intern them and
// never free them.
#pragma once

#include <cupti_pcsampling.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "data/pc_sample.h"

namespace proton::cupti {

/// Maps CUPTI's stall-reason indices (from cuptiPCSamplingGetStallReasons) to our table's
/// positions.
class StallIndex {
 public:
  explicit StallIndex(const std::vector<uint32_t>& hardware_indices);
  /// Our position for CUPTI's index, or -1 when unknown.
  int32_t position(uint32_t hardware_index) const {
    return hardware_index < slots_.size() ? slots_[hardware_index] : -1;
  }

 private:
  std::vector<int32_t> slots_;
};

struct PcDecodeLimits {
  size_t pcs = 0;            // records allocated in pPcData
  size_t stalls_per_pc = 0;  // stall reasons allocated per record
};

struct PcDecodeStats {
  uint64_t records = 0;
  uint64_t bad_records = 0;  // no function name, or nothing readable
  uint64_t bad_stalls = 0;   // unknown stall-reason index
};

/// Interns a CUPTI function name (never null when called).
using InternFunction = std::function<NameId(const char* name)>;
/// The source location of (binary, function, pc), kNoName without line information.
using LocatePc =
    std::function<NameId(uint64_t binary, NameId function, const char* function_name, uint64_t pc)>;

/// Appends the records of `data` to `out` (samples and stalls; the loss counters are the
/// caller's, who knows whether this was the first call of a drain).
PcDecodeStats translate_pc_data(const CUpti_PCSamplingData& data, const PcDecodeLimits& limits,
                                const StallIndex& stalls, uint32_t device,
                                const InternFunction& intern, const LocatePc& locate,
                                PcSampleBatch& out);

}  // namespace proton::cupti
