#include "viewer/source_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "format/pc_stall_reasons.h"
#include "viewer/errors.h"
#include "viewer/frame_names.h"

namespace proton::viewer {

namespace {

// "dir/file.py:12@fn" -> ("dir/file.py", 12); false for other names.
bool split_location(const std::string& name, std::string& file, int& line) {
  size_t at = name.rfind('@');
  std::string head = name.substr(0, at);
  size_t colon = head.rfind(':');
  if (colon == std::string::npos || colon + 1 >= head.size() || head.rfind("pc:", 0) == 0) {
    return false;
  }
  int v = 0;
  for (size_t i = colon + 1; i < head.size(); ++i) {
    if (head[i] < '0' || head[i] > '9' || v > 100'000'000) return false;
    v = v * 10 + (head[i] - '0');
  }
  file = head.substr(0, colon);
  line = v;
  return true;
}

double value_of(const Profile& p, const Node& n, std::string_view metric) {
  int32_t id = p.find_metric(metric);
  if (id < 0) return 0;
  for (const MetricValue& v : n.values) {
    if (v.metric == id) return v.value;
  }
  return 0;
}

// A sample count read from the file, as a whole number (any double prints; no integer cast).
std::string sample_count(double samples) {
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.0f", std::floor(samples));
  return buf;
}

std::string percent(double part, double whole) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%5.1f%%", whole > 0 ? 100.0 * part / whole : 0.0);
  return buf;
}

std::string top_stalls(const SourceLine& l, size_t k) {
  std::vector<std::pair<std::string, double>> s = l.stalls;
  std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::string out;
  for (size_t i = 0; i < s.size() && i < k; ++i) {
    if (s[i].second <= 0) break;
    if (!out.empty()) out += ", ";
    std::string pct = percent(s[i].second, l.samples);
    out += s[i].first + " " + pct.substr(pct.find_first_not_of(' '));
  }
  return out;
}

}  // namespace

std::vector<KernelSource> collect_source(const Profile& p, const std::string& kernel) {
  std::map<std::string, KernelSource> by_name;
  std::map<std::string, std::map<std::string, SourceLine>> lines;  // kernel -> location -> line
  for (const Node& n : p.nodes) {
    if (!n.is_kernel() || n.name.find(kernel) == std::string::npos) continue;
    bool any = false;
    for (int32_t c : n.children) {
      const Node& child = p.nodes[static_cast<size_t>(c)];
      double samples = value_of(p, child, "num_samples");
      if (samples <= 0) continue;
      any = true;
      SourceLine& l = lines[n.name][child.name];
      if (l.location.empty()) {
        l.location = child.name;
        split_location(child.name, l.file, l.line);
      }
      l.samples += samples;
      l.stalled += value_of(p, child, "num_stalled_samples");
      for (const MetricValue& v : child.values) {
        const std::string& m = p.metrics[static_cast<size_t>(v.metric)].name;
        if (m.rfind("stalled_", 0) != 0) continue;
        std::string reason = m.substr(8);
        auto it = std::find_if(l.stalls.begin(), l.stalls.end(),
                               [&](auto& s) { return s.first == reason; });
        if (it == l.stalls.end()) {
          l.stalls.emplace_back(reason, v.value);
        } else {
          it->second += v.value;
        }
      }
    }
    if (!any) continue;
    KernelSource& k = by_name[n.name];
    k.kernel = n.name;
    ++k.call_paths;
  }
  if (by_name.empty()) {
    throw UsageError("no kernel matching '" + kernel +
                     "' has PC samples in this profile (record one with mode=\"pcsampling\")");
  }
  std::vector<KernelSource> out;
  for (auto& [name, k] : by_name) {
    std::map<std::string, double> fam;
    for (auto& [loc, l] : lines[name]) {
      k.samples += l.samples;
      k.stalled += l.stalled;
      for (auto& [reason, v] : l.stalls)
        fam[stall_family_name(stall_family(reason))] += v;
      k.lines.push_back(std::move(l));
    }
    std::sort(k.lines.begin(), k.lines.end(), [](const SourceLine& a, const SourceLine& b) {
      if (a.file.empty() != b.file.empty()) return !a.file.empty();  // PC ranges last
      return a.file != b.file   ? a.file < b.file
             : a.line != b.line ? a.line < b.line
                                : a.location < b.location;
    });
    k.families.assign(fam.begin(), fam.end());
    std::sort(k.families.begin(), k.families.end(),
              [](auto& a, auto& b) { return a.second > b.second; });
    out.push_back(std::move(k));
  }
  return out;
}

std::string render_source(const std::vector<KernelSource>& kernels, bool read_files) {
  std::ostringstream o;
  for (const KernelSource& k : kernels) {
    o << "kernel " << terminal_safe(k.kernel) << ": " << sample_count(k.samples) << " samples, "
      << percent(k.stalled, k.samples) << " stalled, " << k.call_paths << " call path"
      << (k.call_paths == 1 ? "" : "s") << "\n";
    o << "stall families:";
    for (auto& [f, v] : k.families)
      o << "  " << f << percent(v, k.samples);
    o << "\n";
    std::string file;
    size_t i = 0;
    while (i < k.lines.size()) {
      const SourceLine& first = k.lines[i];
      if (first.file.empty()) break;
      size_t end = i;
      while (end < k.lines.size() && k.lines[end].file == first.file)
        ++end;
      o << "\n  " << terminal_safe(first.file) << "\n";
      o << "  samples       %   line  source\n";
      std::vector<std::string> text;
      if (read_files) {
        std::ifstream in(first.file);
        for (std::string s; std::getline(in, s);)
          text.push_back(s);
      }
      std::map<int, const SourceLine*> at;
      for (size_t j = i; j < end; ++j)
        at[k.lines[j].line] = &k.lines[j];
      int lo = std::max(1, at.begin()->first - 2);
      int hi = at.rbegin()->first + 2;
      if (text.empty()) hi = at.rbegin()->first;
      for (int line = lo; line <= hi; ++line) {
        auto it = at.find(line);
        bool have_text = line <= static_cast<int>(text.size());
        if (it == at.end() && !have_text) continue;
        char head[64];
        if (it != at.end()) {
          std::snprintf(head, sizeof(head), "  %7.0f %s %6d  ", std::floor(it->second->samples),
                        percent(it->second->samples, k.samples).c_str(), line);
        } else {
          std::snprintf(head, sizeof(head), "  %7s %6s %6d  ", "", "", line);
        }
        std::string src = have_text ? terminal_safe(text[static_cast<size_t>(line - 1)]) : "";
        if (src.size() > 72) src = src.substr(0, 69) + "...";
        o << head << src;
        if (it != at.end()) {
          o << std::string(src.size() < 72 ? 72 - src.size() : 1, ' ') << "| "
            << top_stalls(*it->second, 3);
        }
        o << "\n";
      }
      i = end;
    }
    if (i < k.lines.size()) {
      o << "\n  without line information (PC ranges)\n";
      for (; i < k.lines.size(); ++i) {
        const SourceLine& l = k.lines[i];
        std::string loc = l.location.substr(0, l.location.find('@'));
        char head[64];
        std::snprintf(head, sizeof(head), "  %7.0f %s  ", std::floor(l.samples),
                      percent(l.samples, k.samples).c_str());
        o << head << terminal_safe(loc) << "  | " << top_stalls(l, 3) << "\n";
      }
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace proton::viewer
