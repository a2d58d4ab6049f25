// `--output-format html`: one self-contained page (no network, no external files) with an
// interactive icicle graph of one additive metric. Clicking a frame zooms to it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/finding.h"
#include "viewer/derived_metrics.h"
#include "viewer/frame_names.h"
#include "viewer/profile.h"

namespace proton::viewer {

/// `findings` (the analyzer's, on `profile`: advise_view.h) are listed beside the graph, each
/// linked to its frame; with none the page says so.
std::string to_html(const Profile& profile, const Column& column, const std::vector<char>& visible,
                    const NameOptions& names, const std::string& title,
                    const std::vector<analysis::Finding>& findings = {});

// The page around the data; `data_json` must already be safe inside a <script> element.
std::string html_page(std::string_view title_html, std::string_view data_json);

// Escapes text for HTML element content.
std::string html_escape(std::string_view text);

}  // namespace proton::viewer
