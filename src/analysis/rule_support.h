// Small pieces the rules share: the profile's total kernel time, severity from time at stake,
// keeping the innermost of nested findings, and numbers in words.
#pragma once

#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/profile_view.h"
#include "analysis/rules.h"

namespace proton::analysis {

/// Kernel time of the whole profile ("time (ns)" over kernel nodes), 0 when none.
double total_kernel_time(const ProfileView& view);
/// High, medium or low by `saving_ns` as a share of `total_ns` (rules.h).
Severity severity_for(double saving_ns, double total_ns);
/// Fills node-dependent fields (frame) of a finding.
Finding finding_at(const ProfileView& view, const char* rule, int32_t node);
/// "2.1 us", "340 ms", "1.2 s".
std::string duration(double ns);
/// `v` with `digits` decimals: "1.50".
std::string fixed(double v, int digits);
/// "12.5%".
std::string percent(double share);
/// A count with thousands separators: "12,800".
std::string count(double n);

/// Whether `ancestor` lies strictly above `node`.
bool is_ancestor(const ProfileView& view, int32_t ancestor, int32_t node);

/// Drops findings whose node has a descendant finding (of the same list) holding at least
/// kExplainsParentShare of the value `weight` gives it: the inner frame is the cause.
template <class Weight>
std::vector<Finding> innermost(const ProfileView& view, std::vector<Finding> found, Weight weight) {
  std::vector<Finding> out;
  for (size_t i = 0; i < found.size(); ++i) {
    bool explained = false;
    for (size_t j = 0; j < found.size() && !explained; ++j) {
      explained = j != i && is_ancestor(view, found[i].node, found[j].node) &&
                  weight(found[j]) >= kExplainsParentShare * weight(found[i]);
    }
    if (!explained) out.push_back(std::move(found[i]));
  }
  return out;
}

}  // namespace proton::analysis
