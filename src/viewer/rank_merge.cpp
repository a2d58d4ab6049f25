#include "viewer/rank_merge.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string_view>

#include "viewer/derived_metrics.h"
#include "viewer/merge.h"
#include "viewer/rank_file.h"

namespace proton::viewer {

namespace {}  // namespace

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

namespace {

// What the fold needs from a parsed file: a Profile (tests, in-memory merges) or a RankFile
// (the streaming path). Nodes: parents before children, siblings in file order.
struct ProfileSource {
  const Profile& p;
  size_t size() const { return p.nodes.size(); }
  std::string_view name(size_t i) const { return p.nodes[i].name; }
  std::string_view type(size_t i) const { return p.nodes[i].type; }
  int32_t parent(size_t i) const { return p.nodes[i].parent; }
  std::vector<std::pair<std::string, std::string>> text(size_t i) const { return p.nodes[i].text; }
  bool has_text(size_t i) const { return !p.nodes[i].text.empty(); }
  const std::vector<MetricInfo>& metrics() const { return p.metrics; }
  std::vector<double> stored(int32_t m) const { return p.stored(m); }
  std::vector<double> inclusive(int32_t m) const { return p.inclusive(m); }
  const std::vector<DeviceInfo>& devices() const { return p.devices; }
  const RunMeta& run() const { return p.run; }
};

struct RankFileSource {
  const RankFile& f;
  std::vector<uint32_t> first;  // texts of node i: order[first[i] .. first[i + 1])
  std::vector<uint32_t> order;
  explicit RankFileSource(const RankFile& file) : f(file), first(file.nodes.size() + 1, 0) {
    for (const auto& t : f.texts)
      ++first[static_cast<size_t>(t.node) + 1];
    for (size_t i = 1; i < first.size(); ++i)
      first[i] += first[i - 1];
    order.resize(f.texts.size());
    std::vector<uint32_t> fill(first.begin(), first.end() - 1);
    for (size_t k = 0; k < f.texts.size(); ++k)
      order[fill[static_cast<size_t>(f.texts[k].node)]++] = static_cast<uint32_t>(k);
  }
  size_t size() const { return f.nodes.size(); }
  std::string_view name(size_t i) const { return f.str(f.nodes[i].name); }
  std::string_view type(size_t i) const { return f.str(f.nodes[i].type); }
  int32_t parent(size_t i) const { return f.nodes[i].parent; }
  bool has_text(size_t i) const { return first[i] != first[i + 1]; }
  std::vector<std::pair<std::string, std::string>> text(size_t i) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (uint32_t k = first[i]; k < first[i + 1]; ++k) {
      const auto& t = f.texts[order[k]];
      out.emplace_back(f.str(t.key), f.str(t.value));
    }
    return out;
  }
  const std::vector<MetricInfo>& metrics() const { return f.metrics; }
  std::vector<double> stored(int32_t m) const { return f.stored(m); }
  std::vector<double> inclusive(int32_t m) const { return f.inclusive(m); }
  const std::vector<DeviceInfo>& devices() const { return f.devices; }
  const RunMeta& run() const { return f.run; }
};

}  // namespace

int32_t RankMerger::child_of(int32_t parent, std::string_view name, int occurrence) {
  // Keyed by a hash of the name, checked against the node's own name: a string key per node
  // was a tenth of the merge's memory. Two names of one hash (never seen in practice) go to a
  // map keyed by the whole name.
  ChildKey k{std::hash<std::string_view>{}(name), parent, occurrence};
  auto it = children_.find(k);
  if (it != children_.end()) {
    if (tree_.nodes[static_cast<size_t>(it->second)].name == name) return it->second;
    key_.assign(sizeof(int32_t) * 2, '\0');
    std::memcpy(key_.data(), &parent, sizeof(int32_t));
    std::memcpy(key_.data() + sizeof(int32_t), &occurrence, sizeof(int32_t));
    key_.append(name);
    auto c = collided_.find(key_);
    if (c != collided_.end()) return c->second;
    int32_t id = new_node(parent, name);
    collided_.emplace(key_, id);
    return id;
  }
  int32_t id = new_node(parent, name);
  children_.emplace(k, id);
  return id;
}

int32_t RankMerger::new_node(int32_t parent, std::string_view name) {
  int32_t id = tree_.add_node(parent, std::string(name), "");
  ranks_with_.push_back(0);
  stamp_.push_back(0);
  text_of_.push_back(0);
  if (track_presence_) presence_.emplace_back();
  return id;
}

void RankMerger::merge_text(size_t node, TextList from) {
  // Most nodes carry the same few attributes (device_id "0", device_type "CUDA"): lists are
  // shared, so 10,000 kernel nodes cost one list, not 20,000 strings.
  if (text_lists_.empty()) text_lists_.emplace_back();
  const TextList& now = text_lists_[text_of_[node]];
  TextList merged = now;
  bool changed = false;
  for (auto& t : from) {
    bool present = false;
    for (const auto& have : merged)
      present |= have.first == t.first;
    if (!present) {
      merged.push_back(std::move(t));
      changed = true;
    }
  }
  if (!changed) return;
  auto [it, fresh] = text_list_ids_.try_emplace(merged, static_cast<uint32_t>(text_lists_.size()));
  if (fresh) text_lists_.push_back(std::move(merged));
  text_of_[node] = it->second;
}

const RankMerger::TextList& RankMerger::text_of(size_t node) const {
  static const TextList kNone;
  return text_lists_.empty() ? kNone : text_lists_[text_of_[node]];
}

RankMerger::MetricState& RankMerger::state_of(const MetricInfo& info) {
  auto [it, fresh] = metric_index_.try_emplace(info.name, metrics_.size());
  if (fresh) metrics_.push_back(MetricState{info.name, info.kind, true, {}});
  return metrics_[it->second];
}

template <typename Source>
bool RankMerger::same_program(const Source& src) const {
  // Two runs of one program share at least one top-level frame under ROOT. Files with no
  // frames at all (an empty rank) are not evidence of anything.
  const auto& mine = tree_.nodes[0].children;
  if (mine.empty()) return true;
  bool any = false;
  for (size_t i = 1; i < src.size(); ++i) {
    if (src.parent(i) != 0) continue;
    any = true;
    for (int32_t m : mine) {
      if (tree_.nodes[static_cast<size_t>(m)].name == src.name(i)) return true;
    }
  }
  return !any;
}

bool RankMerger::add(const Profile& profile, const std::string& label, std::string& why) {
  return add_source(ProfileSource{profile}, label, why);
}

bool RankMerger::add_file(const RankFile& file, const std::string& label, std::string& why) {
  return add_source(RankFileSource(file), label, why);
}

template <typename Source>
bool RankMerger::add_source(const Source& src, const std::string& label, std::string& why) {
  if (src.size() == 0) {
    why = label + ": empty profile, left out";
    return false;
  }
  const RunMeta& run = src.run();
  if (!run.version.empty()) {
    if (version_.empty()) {
      version_ = run.version;
      version_label_ = label;
    } else if (run.version != version_) {
      why = label + ": written by Proton " + run.version + ", but " + version_label_ +
            " by Proton " + version_ + "; left out (profile the ranks with one version)";
      return false;
    }
  }
  auto index = static_cast<int64_t>(labels_.size());
  int64_t rank = run.rank >= 0 ? run.rank : index;
  if (auto it = input_of_rank_.find(rank); it != input_of_rank_.end()) {
    why = label + ": claims rank " + std::to_string(rank) + ", as " + labels_[it->second] +
          " does; left out (files of two runs mixed?)";
    return false;
  }
  if (tree_.nodes.empty()) {
    tree_.add_node(-1, std::string(src.name(0)), std::string(src.type(0)));
    ranks_with_.push_back(0);
    stamp_.push_back(0);
    text_of_.push_back(0);
    if (src.has_text(0)) merge_text(0, src.text(0));
    if (track_presence_) presence_.emplace_back();
  } else if (!same_program(src)) {
    why = label + ": no call path in common with " + labels_[0] +
          " (a profile of another program?); left out";
    return false;
  }
  size_t input = labels_.size();
  labels_.push_back(label);
  ranks_.push_back(rank);
  world_sizes_.push_back(run.world_size);
  input_of_rank_.emplace(rank, input);
  auto stamp = static_cast<uint32_t>(input + 1);

  // Map every node onto the merged tree; parents come before children. A merged node already
  // taken by this input means a same-named sibling: try the next occurrence.
  std::vector<int32_t> to(src.size(), 0);
  stamp_[0] = stamp;
  for (size_t i = 1; i < src.size(); ++i) {
    int32_t parent = to[static_cast<size_t>(src.parent(i))];
    int32_t m = 0;
    for (int occurrence = 0;; ++occurrence) {
      m = child_of(parent, src.name(i), occurrence);
      if (stamp_[static_cast<size_t>(m)] != stamp) break;
    }
    stamp_[static_cast<size_t>(m)] = stamp;
    to[i] = m;
    Node& out = tree_.nodes[static_cast<size_t>(m)];
    if (out.type.empty()) out.type = src.type(i).empty() ? "function" : std::string(src.type(i));
    if (src.has_text(i)) merge_text(static_cast<size_t>(m), src.text(i));
  }
  size_t words = (input + 64) / 64;
  for (int32_t m : to) {
    ++ranks_with_[static_cast<size_t>(m)];
    if (!track_presence_) continue;
    auto& bits = presence_[static_cast<size_t>(m)];
    if (bits.size() < words) bits.resize(words, 0);
    bits[input / 64] |= uint64_t{1} << (input % 64);
  }

  const auto& infos = src.metrics();
  for (size_t m = 0; m < infos.size(); ++m) {
    const MetricInfo& info = infos[m];
    MetricState& st = state_of(info);
    st.integral &= info.integral;
    st.stats.resize(tree_.nodes.size());
    std::vector<double> own = src.stored(static_cast<int32_t>(m));
    if (st.kind == MetricKind::kProperty) {
      PropertyFold fold = property_fold(st.name);
      for (size_t i = 0; i < own.size(); ++i) {
        Stat& s = st.stats[static_cast<size_t>(to[i])];
        if (is_absent(own[i])) continue;
        if (folds_in(fold, s.stored ? s.sum : kAbsent, own[i])) s.sum = own[i];
        s.stored = true;
      }
      continue;
    }
    std::vector<double> inc = src.inclusive(static_cast<int32_t>(m));
    for (size_t i = 0; i < own.size(); ++i) {
      Stat& s = st.stats[static_cast<size_t>(to[i])];
      if (!is_absent(own[i])) {
        s.sum += own[i];
        s.stored = true;
      }
      double v = inc[i];
      if (is_absent(v)) continue;
      s.total += v;
      if (s.present == 0 || v < s.low) s.low = v;
      if (s.present == 0 || v > s.high) {
        s.high = v;
        s.arg = rank;
      }
      ++s.present;
    }
  }
  for (const DeviceInfo& d : src.devices()) {
    if (tree_.device(d.type, d.id) == nullptr) tree_.devices.push_back(d);
  }
  return true;
}

std::vector<RankMerger::Column> RankMerger::columns() const {
  std::vector<Column> out;
  for (size_t k = 0; k < metrics_.size(); ++k) {
    const MetricState& st = metrics_[k];
    out.push_back({st.name, st.integral, Stat::kSum, k});
    if (st.kind == MetricKind::kProperty) continue;
    out.push_back({merge_stat_name(st.name, "mean", st.kind), false, Stat::kMean, k});
    out.push_back({merge_stat_name(st.name, "min", st.kind), st.integral, Stat::kMin, k});
    out.push_back({merge_stat_name(st.name, "max", st.kind), st.integral, Stat::kMax, k});
    out.push_back({merge_stat_name(st.name, "argmax", st.kind), true, Stat::kArgmax, k});
    if (st.kind == MetricKind::kInclusive)
      out.push_back({merge_stat_name(st.name, "imbalance", st.kind), false, Stat::kImbalance, k});
  }
  out.push_back({"ranks (exc)", true, Stat::kRanks, 0});
  return out;
}

double RankMerger::value(size_t node, const Column& c) const {
  if (c.what == Stat::kRanks) return static_cast<double>(ranks_with_[node]);
  const MetricState& st = metrics_[c.metric];
  if (node >= st.stats.size()) return kAbsent;
  const Stat& s = st.stats[node];
  if (c.what == Stat::kSum) return s.stored ? s.sum : kAbsent;
  if (s.present == 0) return kAbsent;
  bool all = s.present == labels_.size();
  switch (c.what) {
    // As merge.cpp: a rank without the frame counts as 0 in mean, min and max.
    case Stat::kMean:
      return s.total / static_cast<double>(labels_.size());
    case Stat::kMin:
      return all ? s.low : std::min(s.low, 0.0);
    case Stat::kMax:
      return all ? s.high : std::max(s.high, 0.0);
    case Stat::kArgmax:
      return static_cast<double>(s.arg);
    case Stat::kImbalance: {
      double present_mean = s.total / s.present;
      return present_mean > 0 ? s.high / present_mean : kAbsent;
    }
    default:
      return kAbsent;
  }
}

Profile RankMerger::result() const {
  Profile out = tree_;
  for (size_t i = 0; i < out.nodes.size(); ++i)
    out.nodes[i].text = text_of(i);
  std::vector<Column> cols = columns();
  for (const Column& c : cols) {
    int32_t id = out.metric_id(c.name);
    out.metrics[static_cast<size_t>(id)].integral = c.integral;
    // The summed column keeps the kind its files gave it, a declared one ("metric_rules") too.
    if (c.what == Stat::kSum) out.metrics[static_cast<size_t>(id)].kind = metrics_[c.metric].kind;
    for (size_t i = 0; i < out.nodes.size(); ++i) {
      double v = value(i, c);
      if (!is_absent(v)) out.add_value(static_cast<int32_t>(i), id, v);
    }
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
