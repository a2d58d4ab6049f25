// The analyzer: every rule of rules.h over one profile, findings ranked by the time at stake.
#pragma once

#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/profile_view.h"

namespace proton::analysis {

/// All findings, ranked: estimated saving (largest first, findings without one last), then
/// severity, then rule id and frame for a stable order. Hints ("hint.*") come last.
std::vector<Finding> advise(const ProfileView& view);

/// The findings as a JSON list of objects: rule, severity, frame (names below the root),
/// evidence (an object), seen, why, suggestion, saving_ns (a number or null).
std::string findings_json(const std::vector<Finding>& findings);

/// The findings for a terminal: the first `top` numbered, then the hints. `title` heads it.
std::string findings_text(const std::vector<Finding>& findings, const std::string& title,
                          size_t top);

}  // namespace proton::analysis
