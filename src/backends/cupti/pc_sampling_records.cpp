#include "backends/cupti/pc_sampling_records.h"

#include <algorithm>
#include <limits>

namespace proton::cupti {

StallIndex::StallIndex(const std::vector<uint32_t>& hardware_indices) {
  uint32_t top = 0;
  for (uint32_t h : hardware_indices)
    top = std::max(top, h);
  // CUPTI's indices are small (under 64 on every GPU so far); a wild one would make a huge
  // table, so anything past 4096 is left unknown.
  constexpr uint32_t kMaxIndex = 4096;
  slots_.assign(std::min(top, kMaxIndex) + 1, -1);
  for (size_t i = 0; i < hardware_indices.size(); ++i) {
    if (hardware_indices[i] <= kMaxIndex) slots_[hardware_indices[i]] = static_cast<int32_t>(i);
  }
}

PcDecodeStats translate_pc_data(const CUpti_PCSamplingData& data, const PcDecodeLimits& limits,
                                const StallIndex& stalls, uint32_t device,
                                const InternFunction& intern, const LocatePc& locate,
                                PcSampleBatch& out) {
  PcDecodeStats st;
  if (data.pPcData == nullptr) return st;
  size_t n = std::min(data.totalNumPcs, limits.pcs);
  for (size_t i = 0; i < n; ++i) {
    const CUpti_PCSamplingPCData& pc = data.pPcData[i];
    ++st.records;
    if (pc.functionName == nullptr || pc.functionName[0] == '\0') {
      ++st.bad_records;
      continue;
    }
    size_t count = std::min(pc.stallReasonCount, limits.stalls_per_pc);
    if (count > 0 && pc.stallReason == nullptr) {
      ++st.bad_records;
      continue;
    }
    PcSample s;
    s.binary_id = pc.cubinCrc;
    s.pc_offset = pc.pcOffset;
    s.device = device;
    s.function = intern(pc.functionName);
    if (s.function == kNoName) {
      ++st.bad_records;
      continue;
    }
    s.location = locate(pc.cubinCrc, s.function, pc.functionName, pc.pcOffset);
    if (out.stalls.size() > std::numeric_limits<uint32_t>::max() - count) {
      ++st.bad_records;  // a batch this large is never drained at once: stop, lose nothing else
      break;
    }
    s.stall_begin = static_cast<uint32_t>(out.stalls.size());
    for (size_t k = 0; k < count; ++k) {
      const CUpti_PCSamplingStallReason& r = pc.stallReason[k];
      int32_t pos = stalls.position(r.pcSamplingStallReasonIndex);
      if (pos < 0) {
        ++st.bad_stalls;
        continue;
      }
      if (r.samples == 0) continue;
      out.stalls.push_back({static_cast<uint32_t>(pos), r.samples});
    }
    s.stall_count = static_cast<uint32_t>(out.stalls.size() - s.stall_begin);
    if (s.stall_count > 0) out.samples.push_back(s);
  }
  return st;
}

}  // namespace proton::cupti
