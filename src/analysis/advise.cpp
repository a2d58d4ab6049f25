#include "analysis/advise.h"

#include <algorithm>
#include <cmath>

#include "analysis/rule_support.h"
#include "analysis/rules.h"
#include "format/json_writer.h"

namespace proton::analysis {

namespace {

bool is_hint(const Finding& f) {
  return f.rule.starts_with("hint.");
}

}  // namespace

std::vector<Finding> advise(const ProfileView& view) {
  std::vector<Finding> all;
  if (view.nodes.empty()) return all;
  for (auto rule : {launch_bound, roofline, stall_hot_lines, stragglers, variant_spread, occupancy,
                    spills, tail_effect, autotune_spread, kernel_time_variance, region_imbalance,
                    host_sync, sync_copy, comm_exposed, missing_sources}) {
    for (Finding& f : rule(view)) {
      // A damaged file's infinities give no estimate worth ranking by.
      if (f.saving_ns && !std::isfinite(*f.saving_ns)) f.saving_ns.reset();
      all.push_back(std::move(f));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Finding& a, const Finding& b) {
    if (is_hint(a) != is_hint(b)) return is_hint(b);
    if (is_hint(a)) return false;  // hints keep the order missing_sources gives them
    if (a.saving_ns.has_value() != b.saving_ns.has_value()) return a.saving_ns.has_value();
    if (a.saving_ns && *a.saving_ns != *b.saving_ns) return *a.saving_ns > *b.saving_ns;
    if (a.severity != b.severity) return a.severity < b.severity;
    if (a.rule != b.rule) return a.rule < b.rule;
    return a.node < b.node;
  });
  return all;
}

std::string findings_json(const std::vector<Finding>& findings) {
  std::string out;
  JsonWriter w(out);
  w.begin_array();
  for (const Finding& f : findings) {
    w.begin_object();
    w.key("rule").value(f.rule);
    w.key("severity").value(severity_name(f.severity));
    w.key("frame").begin_array();
    for (const std::string& name : f.frame)
      w.value(name);
    w.end_array();
    w.key("evidence").begin_object();
    for (const auto& [key, v] : f.evidence) {
      w.key(key);
      if (const double* d = std::get_if<double>(&v)) {
        // Plain JSON for every reader: a number that is not finite is no number.
        if (std::isfinite(*d)) {
          w.value(*d);
        } else {
          w.null();
        }
      } else {
        w.value(std::get<std::string>(v));
      }
    }
    w.end_object();
    w.key("seen").value(f.seen);
    w.key("why").value(f.why);
    w.key("suggestion").value(f.suggestion);
    w.key("saving_ns");
    if (f.saving_ns) {
      w.value(*f.saving_ns);
    } else {
      w.null();
    }
    w.end_object();
  }
  w.end_array();
  out += "\n";
  return out;
}

std::string findings_text(const std::vector<Finding>& findings, const std::string& title,
                          size_t top) {
  std::string out = "Advice for " + title + "\n";
  size_t shown = 0, answers = 0;
  for (const Finding& f : findings)
    answers += is_hint(f) ? 0 : 1;
  if (answers == 0) out += "No finding: nothing the rules read stands out.\n";
  for (const Finding& f : findings) {
    if (is_hint(f) || shown == top) continue;
    ++shown;
    std::string frame;
    for (const std::string& name : f.frame)
      frame += (frame.empty() ? "" : " > ") + name;
    if (frame.empty()) frame = "(whole profile)";
    out += "\n" + std::to_string(shown) + ". [" + severity_name(f.severity) + "] " + f.rule + "  " +
           frame + "\n";
    out += "   seen:      " + f.seen + "\n";
    out +=
        "   at stake:  " + (f.saving_ns ? "~" + duration(*f.saving_ns) + ". " : "") + f.why + "\n";
    out += "   try:       " + f.suggestion + "\n";
  }
  if (answers > shown) {
    out += "\n(" + std::to_string(answers - shown) + " more; --format json lists all)\n";
  }
  bool any_hint = false;
  for (const Finding& f : findings) {
    if (!is_hint(f)) continue;
    if (!any_hint) out += "\nWhat more would help:\n";
    any_hint = true;
    out += "- " + f.seen + " " + f.suggestion + "\n";
  }
  return out;
}

}  // namespace proton::analysis
