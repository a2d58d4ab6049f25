#include "viewer/rank_merge.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string_view>

#include "viewer/derived_metrics.h"

namespace proton::viewer {

namespace {

// "time (ns)" + "max" -> "time:max (ns) (exc)"; "util (exc)" + "max" -> "util:max (exc)"; the
// same names merge.cpp writes, so both merges read alike.
std::string stat_name(std::string_view metric, std::string_view stat, MetricKind kind) {
  std::string_view core = trim(metric);
  if (kind != MetricKind::kInclusive) core = trim(core.substr(0, core.size() - 5));
  auto open = core.find('(');
  std::string_view base = trim(core.substr(0, open));
  std::string name(base);
  name.append(":").append(stat);
  // The rank and the ratio have no unit.
  if (open != std::string_view::npos && stat != "argmax" && stat != "imbalance")
    name.append(" ").append(core.substr(open));
  name += stat == "argmax" ? " (pty)" : " (exc)";
  return name;
}

}  // namespace

std::string rank_ranges(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

int32_t RankMerger::child_of(int32_t parent, const std::string& name, int occurrence,
                             const Node& from) {
  // Key: parent id, occurrence among same-named siblings, name (as align.cpp groups them).
  std::string key(sizeof(int32_t) * 2, '\0');
  std::memcpy(key.data(), &parent, sizeof(int32_t));
  std::memcpy(key.data() + sizeof(int32_t), &occurrence, sizeof(int32_t));
  key += name;
  auto [it, fresh] = children_.try_emplace(std::move(key), 0);
  if (fresh) {
    it->second = tree_.add_node(parent, from.name, from.type);
    tree_.nodes.back().text = from.text;
    presence_.emplace_back();
  } else if (!from.text.empty()) {
    Node& out = tree_.nodes[static_cast<size_t>(it->second)];
    for (const auto& t : from.text) {
      if (out.text_of(t.first).empty()) out.text.push_back(t);
    }
  }
  return it->second;
}

RankMerger::MetricState& RankMerger::state_of(const MetricInfo& info) {
  auto [it, fresh] = metric_index_.try_emplace(info.name, metrics_.size());
  if (fresh) metrics_.push_back(MetricState{info.name, info.kind, true, {}});
  return metrics_[it->second];
}

bool RankMerger::same_program(const Profile& profile) const {
  // Two runs of one program share at least one top-level frame under ROOT. Files with no
  // frames at all (an empty rank) are not evidence of anything.
  const auto& mine = tree_.nodes[0].children;
  const auto& theirs = profile.nodes[0].children;
  if (mine.empty() || theirs.empty()) return true;
  for (int32_t c : theirs) {
    const std::string& name = profile.nodes[static_cast<size_t>(c)].name;
    for (int32_t m : mine) {
      if (tree_.nodes[static_cast<size_t>(m)].name == name) return true;
    }
  }
  return false;
}

bool RankMerger::add(const Profile& profile, const std::string& label, std::string& why) {
  if (profile.nodes.empty()) {
    why = label + ": empty profile, left out";
    return false;
  }
  if (!profile.run.version.empty()) {
    if (version_.empty()) {
      version_ = profile.run.version;
      version_label_ = label;
    } else if (profile.run.version != version_) {
      why = label + ": written by Proton " + profile.run.version + ", but " + version_label_ +
            " by Proton " + version_ + "; left out (profile the ranks with one version)";
      return false;
    }
  }
  auto index = static_cast<int64_t>(labels_.size());
  int64_t rank = profile.run.rank >= 0 ? profile.run.rank : index;
  if (auto it = input_of_rank_.find(rank); it != input_of_rank_.end()) {
    why = label + ": claims rank " + std::to_string(rank) + ", as " + labels_[it->second] +
          " does; left out (files of two runs mixed?)";
    return false;
  }
  if (tree_.nodes.empty()) {
    tree_.add_node(-1, profile.nodes[0].name, profile.nodes[0].type);
    tree_.nodes[0].text = profile.nodes[0].text;
    presence_.emplace_back();
  } else if (!same_program(profile)) {
    why = label + ": no call path in common with " + labels_[0] +
          " (a profile of another program?); left out";
    return false;
  }
  size_t input = labels_.size();
  labels_.push_back(label);
  ranks_.push_back(rank);
  world_sizes_.push_back(profile.run.world_size);
  input_of_rank_.emplace(rank, input);

  // Map every node onto the merged tree; parents come before children (profile.h).
  std::vector<int32_t> to(profile.nodes.size(), 0);
  std::unordered_map<std::string_view, int> seen;
  for (size_t i = 0; i < profile.nodes.size(); ++i) {
    const auto& kids = profile.nodes[i].children;
    if (kids.size() > 1) seen.clear();
    for (int32_t c : kids) {
      const Node& child = profile.nodes[static_cast<size_t>(c)];
      int occurrence = kids.size() > 1 ? seen[child.name]++ : 0;
      to[static_cast<size_t>(c)] = child_of(to[i], child.name, occurrence, child);
    }
  }
  size_t words = (input + 64) / 64;
  for (int32_t m : to) {
    auto& bits = presence_[static_cast<size_t>(m)];
    if (bits.size() < words) bits.resize(words, 0);
    bits[input / 64] |= uint64_t{1} << (input % 64);
  }

  for (size_t m = 0; m < profile.metrics.size(); ++m) {
    const MetricInfo& info = profile.metrics[m];
    MetricState& st = state_of(info);
    st.integral &= info.integral;
    st.stats.resize(tree_.nodes.size());
    std::vector<double> own = profile.stored(static_cast<int32_t>(m));
    if (st.kind == MetricKind::kProperty) {
      for (size_t i = 0; i < own.size(); ++i) {
        Stat& s = st.stats[static_cast<size_t>(to[i])];
        if (!std::isnan(own[i]) && !s.stored) {
          s.sum = own[i];
          s.stored = true;
        }
      }
      continue;
    }
    std::vector<double> inc = profile.inclusive(static_cast<int32_t>(m));
    for (size_t i = 0; i < own.size(); ++i) {
      Stat& s = st.stats[static_cast<size_t>(to[i])];
      if (!std::isnan(own[i])) {
        s.sum += own[i];
        s.stored = true;
      }
      double v = inc[i];
      if (std::isnan(v)) continue;
      s.total += v;
      if (s.present == 0 || v < s.low) s.low = v;
      if (s.present == 0 || v > s.high) {
        s.high = v;
        s.arg = rank;
      }
      ++s.present;
    }
  }
  for (const DeviceInfo& d : profile.devices) {
    if (tree_.device(d.type, d.id) == nullptr) tree_.devices.push_back(d);
  }
  return true;
}

Profile RankMerger::result() const {
  Profile out = tree_;
  size_t nodes = out.nodes.size();
  auto n = static_cast<double>(labels_.size());
  for (const MetricState& st : metrics_) {
    int32_t sum_id = out.metric_id(st.name);
    out.metrics[static_cast<size_t>(sum_id)].integral = st.integral;
    if (st.kind == MetricKind::kProperty) {
      for (size_t i = 0; i < st.stats.size(); ++i) {
        if (st.stats[i].stored) out.add_value(static_cast<int32_t>(i), sum_id, st.stats[i].sum);
      }
      continue;
    }
    int32_t mean_id = out.metric_id(stat_name(st.name, "mean", st.kind));
    int32_t min_id = out.metric_id(stat_name(st.name, "min", st.kind));
    int32_t max_id = out.metric_id(stat_name(st.name, "max", st.kind));
    int32_t argmax_id = out.metric_id(stat_name(st.name, "argmax", st.kind));
    int32_t imbalance_id = -1;
    if (st.kind == MetricKind::kInclusive) {
      imbalance_id = out.metric_id(stat_name(st.name, "imbalance", st.kind));
      out.metrics[static_cast<size_t>(imbalance_id)].integral = false;
    }
    out.metrics[static_cast<size_t>(mean_id)].integral = false;
    out.metrics[static_cast<size_t>(min_id)].integral = st.integral;
    out.metrics[static_cast<size_t>(max_id)].integral = st.integral;
    for (size_t i = 0; i < st.stats.size(); ++i) {
      const Stat& s = st.stats[i];
      auto node = static_cast<int32_t>(i);
      if (s.stored) out.add_value(node, sum_id, s.sum);
      if (s.present == 0) continue;
      bool all = s.present == labels_.size();
      // As merge.cpp: a rank without the frame counts as 0 in mean, min and max.
      out.add_value(node, mean_id, s.total / n);
      out.add_value(node, min_id, all ? s.low : std::min(s.low, 0.0));
      out.add_value(node, max_id, all ? s.high : std::max(s.high, 0.0));
      out.add_value(node, argmax_id, static_cast<double>(s.arg));
      double present_mean = s.total / s.present;
      if (imbalance_id >= 0 && present_mean > 0)
        out.add_value(node, imbalance_id, s.high / present_mean);
    }
  }
  int32_t ranks_id = out.metric_id("ranks (exc)");
  for (size_t i = 0; i < nodes; ++i) {
    size_t count = 0;
    for (uint64_t w : presence_[i])
      count += static_cast<size_t>(std::popcount(w));
    out.add_value(static_cast<int32_t>(i), ranks_id, static_cast<double>(count));
  }
  return out;
}

std::vector<std::string> RankMerger::set_warnings() const {
  std::vector<std::string> out;
  int64_t world = -1;
  bool mixed = false;
  for (int64_t w : world_sizes_) {
    if (w < 0) continue;
    if (world >= 0 && w != world) mixed = true;
    world = std::max(world, w);
  }
  if (mixed) out.push_back("the files record different world sizes (runs of different jobs?)");
  if (world > 0) {
    std::vector<int64_t> missing;
    for (int64_t r = 0; r < world && missing.size() < 100000; ++r) {
      if (!input_of_rank_.contains(r)) missing.push_back(r);
    }
    if (!missing.empty()) {
      out.push_back("rank" + std::string(missing.size() > 1 ? "s " : " ") + rank_ranges(missing) +
                    " of " + std::to_string(world) + " missing: the merge covers " +
                    std::to_string(labels_.size()) + " ranks");
    }
  }
  return out;
}

}  // namespace proton::viewer
