// A Hatchet file read into a compact, flat form for the streaming rank merge.
//
// RankMerger folds thousands of rank files one at a time; a full Profile (profile.h) costs
// about three times the file's size in small allocations, which at 1,024 ranks made memory, not
// the tree, the limit. Here every string lives in one arena and each node is a few integers.
// Read by the same reader as parse_hatchet (format/hatchet_reader.h), so it accepts what
// parse_hatchet accepts, with the same metric kinds, and throws the same InputError (offset +
// reason) on the rest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "viewer/profile.h"

namespace proton::viewer {

struct RankFile {
  struct Span {
    uint32_t offset = 0;
    uint32_t size = 0;
  };
  struct FlatNode {
    Span name;
    Span type;
    int32_t parent = -1;  // always smaller than the node's own index
  };
  struct Value {
    int32_t node;
    int32_t metric;
    double value;
  };
  struct Text {
    int32_t node;
    Span key;
    Span value;
  };

  std::string arena;
  std::vector<FlatNode> nodes;
  std::vector<Value> values;  // a repeated key on one node sums, as Hatchet does
  std::vector<Text> texts;
  std::vector<MetricInfo> metrics;
  std::vector<DeviceInfo> devices;
  RunMeta run;

  std::string_view str(Span s) const { return std::string_view(arena).substr(s.offset, s.size); }
  // One metric's stored values per node (kAbsent where none).
  std::vector<double> stored(int32_t metric) const;
  // Inclusive values for kInclusive metrics (as Profile::inclusive), stored for the others.
  std::vector<double> inclusive(int32_t metric) const;
};

RankFile parse_rank_file(std::string_view text);
// The same into `out`, reusing its buffers: a merge of many files allocates them once.
void parse_rank_file(std::string_view text, RankFile& out);

}  // namespace proton::viewer
