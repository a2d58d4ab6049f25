// The terminal view: one line per frame, metric columns aligned on the left, the call tree on
// the right, as Triton's viewer prints it (plus a header naming the columns).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "viewer/derived_metrics.h"
#include "viewer/frame_names.h"
#include "viewer/profile.h"

namespace proton::viewer {

// Which side of a diff a frame came from.
enum Presence : uint8_t { kBoth = 0, kOnlyMain = 1, kOnlyOther = 2 };

struct RenderOptions {
  NameOptions names;
  int max_depth = 100;  // the root is depth 0
  bool color = false;
  bool print_sorted = false;
  bool diff = false;                               // colour the first column by sign
  const std::vector<char>* visible = nullptr;      // -t mask; null shows every node
  const std::vector<uint8_t>* presence = nullptr;  // diff sides; null when not diffing
  std::string main_label;                          // shown as "[only in <label>]"
  std::string other_label;
};

// Formats a value: "-" when absent, integers without decimals, else 3 decimals (scientific
// below 0.001 so small utilisations stay readable).
std::string format_value(double value, bool integral);

void render_tree(std::ostream& out, const Profile& profile, const std::vector<Column>& columns,
                 const RenderOptions& options);

}  // namespace proton::viewer
