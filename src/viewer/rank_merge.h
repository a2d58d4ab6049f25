// Streaming merge of many profiles of one program (one per rank of a job).
//
// Profiles are added one at a time and folded into running per-node statistics, so merging
// 1,024 ranks holds one input profile and the merged tree, never all inputs at once
// (bench/rank_merge.py measures it). The result matches merge_profiles() (merge.h):
//   <metric>                      the sum over ranks of the stored (exclusive) values;
//   <name>:mean|min|max [(unit)] (exc)  over the ranks' inclusive values, a rank lacking the
//                                 frame counting as 0 (so mean = sum / ranks);
//   <name>:argmax (pty)           the rank holding the max: the rank the file records
//                                 (src/io/run_info.h), else the input's position;
//   <property> (pty)              the first input's value; for extrema ("time_min (ns)"), the
//                                 extreme over the ranks (property_fold, profile.h);
// and adds, for inclusive metrics,
//   <name>:imbalance (exc)        max / mean over the ranks that have the frame (1 = balanced);
//   ranks (exc)                   on every node: how many ranks have the frame.
// Ranks that lack a frame are not folded into the imbalance: they are listed as missing in the
// straggler view (stragglers.h) instead of being shown as zeros.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "viewer/profile.h"

namespace proton::viewer {

struct RankFile;

class RankMerger {
 public:
  // Folds `profile` in. When it cannot be merged with what came before (a different program,
  // a different Proton version, a rank already seen) it is left out: returns false and sets
  // `why` (naming `label` and the earlier file).
  bool add(const Profile& profile, const std::string& label, std::string& why);
  // The same for a file read by parse_rank_file (rank_file.h): the streaming path.
  bool add_file(const RankFile& file, const std::string& label, std::string& why);

  size_t size() const { return labels_.size(); }
  // The merged profile (valid after at least one add()).
  Profile result() const;

  // Writes result() as Hatchet JSON straight from the running statistics, without building
  // it: the merge of 1,024 ranks stays within a few times one input's size
  // (rank_merge_writer.cpp). Atomic: a temporary file renamed over `path`.
  void write_json(const std::string& path) const;

  // Keep, per node, which inputs have it (for the straggler view); call before add().
  void track_presence() { track_presence_ = true; }
  // Per merged node: which inputs (in add order) have it (needs track_presence()).
  bool has(size_t node, size_t input) const {
    if (node >= presence_.size() || input / 64 >= presence_[node].size()) return false;
    return (presence_[node][input / 64] >> (input % 64)) & 1;
  }
  bool tracks_presence() const { return track_presence_; }
  size_t node_count() const { return tree_.nodes.size(); }
  const Profile& structure() const { return tree_; }
  // The rank each input stands for (its recorded rank, else its position).
  const std::vector<int64_t>& ranks() const { return ranks_; }
  const std::vector<std::string>& labels() const { return labels_; }
  // Warnings about the set as a whole (ranks missing from the world size, mixed world sizes).
  std::vector<std::string> set_warnings() const;

 private:
  struct Stat {
    enum What : uint8_t { kSum, kMean, kMin, kMax, kArgmax, kImbalance, kRanks };
    double sum = 0;    // stored values
    double total = 0;  // inclusive values
    double low = 0;
    double high = 0;
    int64_t arg = -1;
    uint32_t present = 0;  // inputs with an inclusive value
    bool stored = false;   // some input stored a value
  };
  struct MetricState {
    std::string name;
    MetricKind kind;
    bool integral = true;
    std::vector<Stat> stats;  // per merged node
  };

  // One output column: a statistic of one metric.
  struct Column {
    std::string name;
    bool integral;
    Stat::What what;
    size_t metric;
  };
  std::vector<Column> columns() const;
  double value(size_t node, const Column& c) const;  // kAbsent when the node has none

  using TextList = std::vector<std::pair<std::string, std::string>>;
  int32_t child_of(int32_t parent, std::string_view name, int occurrence);
  int32_t new_node(int32_t parent, std::string_view name);
  void merge_text(size_t node, TextList from);  // adds the keys the node lacks
  const TextList& text_of(size_t node) const;
  MetricState& state_of(const MetricInfo& info);
  template <typename Source>
  bool same_program(const Source& src) const;
  template <typename Source>
  bool add_source(const Source& src, const std::string& label, std::string& why);

  Profile tree_;  // names, types, text attributes, devices; no values
  struct ChildKey {
    size_t hash;  // of the name
    int32_t parent;
    int32_t occurrence;  // among same-named siblings
    bool operator==(const ChildKey&) const = default;
  };
  struct ChildKeyHash {
    size_t operator()(const ChildKey& k) const {
      return k.hash ^
             (static_cast<size_t>(static_cast<uint32_t>(k.parent)) * 0x9E3779B97F4A7C15ull) ^
             (static_cast<size_t>(k.occurrence) << 40);
    }
  };
  std::unordered_map<ChildKey, int32_t, ChildKeyHash> children_;
  std::map<std::string, int32_t> collided_;  // parent + occurrence + name, on hash collisions
  std::string key_;                          // child_of's reused key buffer
  std::vector<TextList> text_lists_;         // [0] is empty; shared by all nodes holding the same
  std::map<TextList, uint32_t> text_list_ids_;
  std::vector<uint32_t> text_of_;  // per node: index into text_lists_
  std::vector<uint32_t> stamp_;    // per node: 1 + the last input mapped onto it
  std::vector<MetricState> metrics_;
  std::unordered_map<std::string, size_t> metric_index_;
  std::vector<std::vector<uint64_t>> presence_;  // per node, a bit per input (if tracked)
  std::vector<uint32_t> ranks_with_;             // per node, how many inputs have it
  bool track_presence_ = false;
  std::vector<std::string> labels_;
  std::vector<int64_t> ranks_;
  std::vector<int64_t> world_sizes_;
  std::unordered_map<int64_t, size_t> input_of_rank_;
  std::string version_;  // of the first input that recorded one
  std::string version_label_;
};

// Formats ranks as "0, 3-5, 9".
std::string rank_ranges(std::vector<int64_t> ranks);

}  // namespace proton::viewer
