// PcStallTable::from_names: the part of the stall-reason vocabulary (format/pc_stall_reasons.h)
// that interns; the vocabulary itself lives in the format library, without the name table.
#include "common/name_table.h"
#include "format/pc_stall_reasons.h"

namespace proton {

PcStallTable PcStallTable::from_names(const std::vector<std::string>& raw) {
  PcStallTable t;
  t.reasons.reserve(raw.size());
  for (const std::string& name : raw) {
    Reason r;
    r.raw = name;
    r.short_name = std::string(stall_short_name(name));
    r.not_issued = stall_is_not_issued(name);
    r.issued = !r.not_issued && stall_is_issue(name);
    r.family = stall_family(name);
    if (!r.not_issued) r.metric = NameTable::global().intern("stalled_" + r.short_name);
    t.has_not_issued = t.has_not_issued || r.not_issued;
    t.reasons.push_back(std::move(r));
  }
  return t;
}

}  // namespace proton
