#include "backends/instrumentation/region_totals.h"

#include <algorithm>
#include <string>

#include "common/name_table.h"
#include "session/runtime.h"

namespace proton::instr {

namespace {

NameId scope_name(const KernelInfo& k, uint32_t id) {
  if (id < k.scope_names.size() && k.scope_names[id] != kNoName) return k.scope_names[id];
  return NameTable::global().intern("scope_" + std::to_string(id));
}

}  // namespace

std::vector<RegionTotals> region_totals(const KernelInfo& k, const DecodeResult& d) {
  std::vector<RegionTotals> by_scope(256);
  for (const RegionSample& s : d.samples) {
    RegionTotals& t = by_scope[s.scope & 0xffu];
    t.cycles += s.end_cycle - s.start_cycle;
    ++t.count;
  }
  std::vector<RegionTotals> out;
  for (uint32_t id = 0; id < by_scope.size(); ++id) {
    if (by_scope[id].count == 0) continue;
    RegionTotals t = std::move(by_scope[id]);
    // Walk up the parents; a cycle in bad metadata stops at 256 steps.
    uint32_t cur = id;
    for (int steps = 0; steps < 256; ++steps) {
      t.path.push_back(scope_name(k, cur));
      int32_t parent = cur < k.scope_parents.size() ? k.scope_parents[cur] : -1;
      if (parent < 0 || static_cast<uint32_t>(parent) == cur) break;
      cur = static_cast<uint32_t>(parent);
    }
    std::reverse(t.path.begin(), t.path.end());
    out.push_back(std::move(t));
  }
  return out;
}

void SessionRegionSink::deliver(uint64_t sessions, ContextId ctx, const KernelInfo& k,
                                const DecodeResult& d, uint32_t device_id) {
  std::vector<RegionTotals> totals = region_totals(k, d);
  if (totals.empty()) return;
  uint64_t units = uint64_t{k.layout.num_warps} * (d.ctas.size() + d.skipped_ctas);
  Runtime::get().add_regions(sessions, ctx, k.name, totals, units, device_id);
}

}  // namespace proton::instr
