// Stall reasons of PC sampling: their metric names and the families a person can act on.
//
// Hardware names (CUPTI on H100: 40 of them) look like
//   smsp__pcsamp_warps_issue_stalled_long_scoreboard
//   smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued
// The plain name counts every sample in that state; the "_not_issued" twin counts the subset
// where the warp scheduler issued nothing. So the plain reasons sum to the samples, and the
// twins sum to the stalled samples (triton.profiler's `num_stalled_samples`). Each plain reason
// becomes triton.profiler's metric `stalled_<reason>`; twins are kept only in that sum.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"

namespace proton {

enum class StallFamily : uint8_t { kMemory, kDependency, kSynchronization, kIssue, kOther };
inline constexpr int kStallFamilies = 5;

/// "memory", "dependency", "synchronization", "issue/pipe", "other".
const char* stall_family_name(StallFamily f);

/// The short reason of a hardware or metric name: prefixes ("smsp__pcsamp_warps_issue_stalled_",
/// "stalled_") and the "_not_issued" suffix removed: "long_scoreboard".
std::string_view stall_short_name(std::string_view name);
/// Whether `name` is a "_not_issued" twin.
bool stall_is_not_issued(std::string_view name);
/// The family of a reason (hardware, metric or short name).
StallFamily stall_family(std::string_view name);
/// Whether a warp in this state issued an instruction ("selected"): not a stall.
bool stall_is_issue(std::string_view name);

/// The reasons of one collection, in the backend's order.
struct PcStallTable {
  struct Reason {
    std::string raw;          // the hardware's name
    std::string short_name;   // "long_scoreboard"
    NameId metric = kNoName;  // interned "stalled_<short>", kNoName for a "_not_issued" twin
    bool not_issued = false;
    bool issued = false;  // "selected": the warp issued
    StallFamily family = StallFamily::kOther;
  };
  std::vector<Reason> reasons;
  bool has_not_issued = false;  // the hardware reports the twins (else: stalled = not issued)

  /// Builds the table from hardware names, interning metric names in NameTable::global().
  static PcStallTable from_names(const std::vector<std::string>& raw);
  /// Whether samples of `reason` count as stalled (num_stalled_samples).
  bool counts_as_stalled(uint32_t reason) const {
    const Reason& r = reasons[reason];
    return has_not_issued ? r.not_issued : (!r.issued && !r.not_issued);
  }
};

}  // namespace proton
