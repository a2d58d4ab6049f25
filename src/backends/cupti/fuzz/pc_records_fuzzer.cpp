// libFuzzer target: CUPTI PC-sampling records, as the bytes say, through the border decoder
// (pc_sampling_records.h) and on into the tree (data/pc_attribution.h). Claimed counts larger
// than what was allocated, null or empty function names, unknown stall indices: none may read
// out of bounds, and every sample's stall range must lie inside the batch.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cupti/pc_sampling_records.h"
#include "common/name_table.h"
#include "data/pc_attribution.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  template <typename T>
  T get() {
    T v{};
    size_t k = n < sizeof(T) ? n : sizeof(T);
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton;
  using namespace proton::cupti;
  Reader in{data, size};
  static const char* kNames[] = {"kernel_a", "kernel_b", "_Z3fooPf", "k"};
  constexpr size_t kCap = 16;      // records allocated
  constexpr size_t kStallCap = 6;  // stall reasons allocated per record
  std::vector<CUpti_PCSamplingPCData> pcs(kCap);
  std::vector<CUpti_PCSamplingStallReason> stalls(kCap * kStallCap);
  CUpti_PCSamplingData d{};
  d.pPcData = pcs.data();
  d.totalNumPcs = in.get<uint8_t>();  // may claim more than kCap
  for (size_t i = 0; i < kCap; ++i) {
    CUpti_PCSamplingPCData& pc = pcs[i];
    pc.cubinCrc = in.get<uint8_t>();
    pc.pcOffset = in.get<uint16_t>();
    uint8_t name = in.get<uint8_t>();
    pc.functionName = name == 0   ? nullptr
                      : name == 1 ? const_cast<char*>("")
                                  : const_cast<char*>(kNames[name % 4]);
    pc.stallReasonCount = in.get<uint8_t>();  // may claim more than kStallCap
    pc.stallReason = in.get<uint8_t>() == 0 ? nullptr : &stalls[i * kStallCap];
    for (size_t k = 0; k < kStallCap; ++k) {
      stalls[i * kStallCap + k].pcSamplingStallReasonIndex = in.get<uint8_t>();
      stalls[i * kStallCap + k].samples = in.get<uint16_t>();
    }
  }
  StallIndex index({7, 3, 9, 1});
  auto table = std::make_shared<const PcStallTable>(PcStallTable::from_names(
      {"smsp__pcsamp_warps_issue_stalled_wait", "smsp__pcsamp_warps_issue_stalled_wait_not_issued",
       "smsp__pcsamp_warps_issue_stalled_selected", "stalled_barrier"}));
  PcSampleBatch batch;
  batch.reasons = table;
  auto intern = [](const char* s) { return NameTable::global().intern(s); };
  auto locate = [](uint64_t crc, NameId, const char*, uint64_t pc) {
    return (crc & 1) ? NameTable::global().intern("f.py:" + std::to_string(pc % 7) + "@k")
                     : kNoName;
  };
  translate_pc_data(d, {kCap, kStallCap}, index, 0, intern, locate, batch);
  for (const PcSample& s : batch.samples) {
    if (size_t{s.stall_begin} + s.stall_count > batch.stalls.size()) std::abort();
  }
  for (const PcStall& s : batch.stalls) {
    if (s.reason >= table->reasons.size()) std::abort();
  }
  CallTree tree;
  PcAttribution pc;
  pc.note_kernel(NameTable::global().intern("kernel_a"), 0,
                 tree.child(CallTree::kRoot, NameTable::global().intern("kernel_a")), 5);
  pc.add(batch);
  pc.distribute([&](uint32_t) { return &tree; }, true);
  if (pc.stats().pending != 0 ||
      pc.stats().placed + pc.stats().unattributed != pc.stats().samples) {
    std::abort();  // a sample lost or invented
  }
  return 0;
}
