// Turns metric requests (`-m time/ms,util,flop16/s,count/%`) into dense columns over a profile.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "viewer/profile.h"

namespace proton::viewer {

struct Column {
  std::string header;          // what the user asked for, e.g. "time/ms", or the raw name
  std::vector<double> values;  // one per node, kAbsent where undefined
  bool integral = false;       // print without decimals
  // Children never sum to more than their parent, so the column can size a flame graph.
  bool additive = false;
  std::string unit = "none";  // speedscope's unit name for the values
};

// Finds a raw metric by name, case-insensitively and ignoring a "(unit)" suffix, as Triton's
// viewer does: "time" and "TIME (ns)" both find "time (ns)". Returns -1 when absent.
int32_t match_metric(const Profile& profile, std::string_view request);

// The metric shown when -m is not given: time/ms if the profile has time, else its first metric;
// nullopt for a profile without metrics (its frames are shown alone).
std::optional<std::string> default_metric(const Profile& profile);

// Builds one column per request. Throws UsageError naming a request that cannot be derived.
// Non-fatal problems (a device architecture missing from the peak table) go to `warnings`.
std::vector<Column> derive_columns(const Profile& profile, const std::vector<std::string>& requests,
                                   std::vector<std::string>& warnings);

// Lower-cases ASCII letters.
std::string to_lower(std::string_view text);
// trim() is proton::trim (common/text.h), found from this namespace.

}  // namespace proton::viewer
