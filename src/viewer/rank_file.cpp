#include "viewer/rank_file.h"

#include <functional>
#include <utility>

#include "format/hatchet_reader.h"

namespace proton::viewer {

namespace {

// Heterogeneous lookup: a metric name read into the reader's buffer is found without a copy.
struct NameHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class T>
using NameMap = std::unordered_map<std::string, T, NameHash, std::equal_to<>>;

// Builds the compact form: every string into the arena, every node and value a few integers.
class RankFileSink final : public format::HatchetSink {
 public:
  explicit RankFileSink(RankFile& out) : f_(out) {
    f_.arena.clear();
    f_.nodes.clear();
    f_.values.clear();
    f_.texts.clear();
    f_.metrics.clear();
    f_.devices.clear();
    f_.run = RunMeta{};
  }

  void node(int32_t parent) override { f_.nodes.push_back({{}, {}, parent}); }
  void frame_name(int32_t node, std::string_view name) override { at(node).name = span(name); }
  void frame_type(int32_t node, std::string_view type) override { at(node).type = span(type); }
  void metric(int32_t node, std::string_view name, double value, bool integral,
              bool from_array) override {
    int32_t metric = metric_id(name);
    MetricInfo& info = f_.metrics[static_cast<size_t>(metric)];
    info.integral &= integral;
    info.from_array |= from_array;
    f_.values.push_back({node, metric, value});
  }
  void text(int32_t node, std::string_view name, std::string_view value) override {
    RankFile::Span key = span(name);
    f_.texts.push_back({node, key, span(value)});
  }
  // As Profile::declare_kind: the rule applies to the metric now and when it is first seen.
  void declared_kind(std::string_view metric, format::HatchetRule rule) override {
    MetricKind kind =
        rule == format::HatchetRule::kExclusive ? MetricKind::kExclusive : MetricKind::kProperty;
    declared_.insert_or_assign(std::string(metric), kind);
    if (auto it = metric_of_.find(metric); it != metric_of_.end()) {
      f_.metrics[static_cast<size_t>(it->second)].kind = kind;
    }
  }
  void device(DeviceInfo&& device) override { f_.devices.push_back(std::move(device)); }
  void run(RunMeta&& run) override { f_.run = std::move(run); }

 private:
  RankFile::FlatNode& at(int32_t node) { return f_.nodes[static_cast<size_t>(node)]; }

  RankFile::Span span(std::string_view s) {
    auto offset = static_cast<uint32_t>(f_.arena.size());
    f_.arena += s;
    // Spans are 32-bit: names beyond 4 GiB in all are refused rather than wrapped.
    if (f_.arena.size() > UINT32_MAX) throw format::SinkError("names longer than 4 GiB in all");
    return {offset, static_cast<uint32_t>(s.size())};
  }

  int32_t metric_id(std::string_view name) {
    if (auto it = metric_of_.find(name); it != metric_of_.end()) return it->second;
    auto id = static_cast<int32_t>(f_.metrics.size());
    auto declared = declared_.find(name);
    f_.metrics.push_back(MetricInfo{
        std::string(name), declared != declared_.end() ? declared->second : metric_kind_of(name),
        true, false});
    metric_of_.emplace(std::string(name), id);
    return id;
  }

  RankFile& f_;
  NameMap<int32_t> metric_of_;
  NameMap<MetricKind> declared_;
};

}  // namespace

std::vector<double> RankFile::stored(int32_t metric) const {
  std::vector<double> out(nodes.size(), kAbsent);
  for (const Value& v : values) {
    if (v.metric != metric) continue;
    double& slot = out[static_cast<size_t>(v.node)];
    slot = is_absent(slot) ? v.value : slot + v.value;
  }
  return out;
}

std::vector<double> RankFile::inclusive(int32_t metric) const {
  std::vector<double> out = stored(metric);
  if (metrics[static_cast<size_t>(metric)].kind != MetricKind::kInclusive) return out;
  for (size_t i = nodes.size(); i-- > 1;) {
    double v = out[i];
    if (is_absent(v)) continue;
    double& up = out[static_cast<size_t>(nodes[i].parent)];
    up = is_absent(up) ? v : up + v;
  }
  return out;
}

void parse_rank_file(std::string_view text, RankFile& out) {
  RankFileSink sink(out);
  format::read_hatchet(text, sink);
}

RankFile parse_rank_file(std::string_view text) {
  RankFile out;
  parse_rank_file(text, out);
  return out;
}

}  // namespace proton::viewer
