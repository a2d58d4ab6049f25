// The viewer's side of the analyzer (src/analysis): its Profile turned into the analyzer's
// plain view, and the findings as the CLI and the Python module show them.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/profile_view.h"
#include "viewer/frame_names.h"
#include "viewer/profile.h"

namespace proton::viewer {

/// The analyzer's view of `profile`: display names under `names`, metric values as stored,
/// kernels' devices, each device's peaks from the peak table (peak_table.h).
analysis::ProfileView analysis_view(const Profile& profile, const NameOptions& names = {});

/// The ranked findings of `profile` (launch-metadata frames hidden, as the tree shows it): a
/// JSON list when `json`, else text headed by `title` listing the first `top`.
std::string advise_report(Profile profile, const std::string& title, bool json, size_t top,
                          const NameOptions& names = {});

}  // namespace proton::viewer
