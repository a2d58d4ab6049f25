#include "format/pc_stall_reasons.h"

#include <array>

namespace proton {

namespace {

constexpr std::string_view kNotIssued = "_not_issued";

// Reason -> family, by the architecture manuals' meaning of each state. Anything unknown is
// "other": a new GPU's reason is shown under its raw name, never guessed.
struct FamilyOf {
  std::string_view reason;
  StallFamily family;
};
constexpr std::array kFamilies = {
    // Waiting on memory: global/local (long scoreboard), shared memory and MIO queues (short
    // scoreboard, mio), texture, the L1 instruction cache, draining stores at exit.
    FamilyOf{"long_scoreboard", StallFamily::kMemory},
    FamilyOf{"short_scoreboard", StallFamily::kMemory},
    FamilyOf{"lg_throttle", StallFamily::kMemory},
    FamilyOf{"tex_throttle", StallFamily::kMemory},
    FamilyOf{"mio_throttle", StallFamily::kMemory},
    FamilyOf{"drain", StallFamily::kMemory},
    FamilyOf{"imc_miss", StallFamily::kMemory},
    FamilyOf{"gmma", StallFamily::kMemory},
    // Waiting on a result of an earlier arithmetic instruction (fixed latency).
    FamilyOf{"wait", StallFamily::kDependency},
    FamilyOf{"math_dependency", StallFamily::kDependency},
    // Barriers, fences, sleeping, warpgroup arrival (Hopper's wgmma handshakes).
    FamilyOf{"barrier", StallFamily::kSynchronization},
    FamilyOf{"membar", StallFamily::kSynchronization},
    FamilyOf{"sleeping", StallFamily::kSynchronization},
    FamilyOf{"warpgroup_arrive", StallFamily::kSynchronization},
    FamilyOf{"branch_resolving", StallFamily::kIssue},
    // The scheduler and pipes: issued, ready but not picked, pipe busy, dispatch, no
    // instruction fetched.
    FamilyOf{"selected", StallFamily::kIssue},
    FamilyOf{"not_selected", StallFamily::kIssue},
    FamilyOf{"math_pipe_throttle", StallFamily::kIssue},
    FamilyOf{"tensor_pipe_throttle", StallFamily::kIssue},
    FamilyOf{"dispatch_stall", StallFamily::kIssue},
    FamilyOf{"no_instruction", StallFamily::kIssue},
    FamilyOf{"no_instructions", StallFamily::kIssue},
    FamilyOf{"misc", StallFamily::kOther},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace

const char* stall_family_name(StallFamily f) {
  switch (f) {
    case StallFamily::kMemory:
      return "memory";
    case StallFamily::kDependency:
      return "dependency";
    case StallFamily::kSynchronization:
      return "synchronization";
    case StallFamily::kIssue:
      return "issue/pipe";
    case StallFamily::kOther:
      break;
  }
  return "other";
}

std::string_view stall_short_name(std::string_view name) {
  for (std::string_view prefix :
       {std::string_view("smsp__pcsamp_warps_issue_stalled_"), std::string_view("stalled_")}) {
    if (name.substr(0, prefix.size()) == prefix) {
      name.remove_prefix(prefix.size());
      break;
    }
  }
  if (name.ends_with(kNotIssued)) name.remove_suffix(kNotIssued.size());
  return name;
}

bool stall_is_not_issued(std::string_view name) {
  return name.ends_with(kNotIssued);
}

StallFamily stall_family(std::string_view name) {
  std::string_view s = stall_short_name(name);
  for (const FamilyOf& f : kFamilies) {
    if (iequals(s, f.reason)) return f.family;
  }
  return StallFamily::kOther;
}

bool stall_is_issue(std::string_view name) {
  return iequals(stall_short_name(name), "selected");
}

}  // namespace proton
