// The Hatchet profile format, written in one pass. Every writer of it goes through here: the
// session's output (io/hatchet_writer.h), the viewer's profiles and its streaming rank merge.
// So there is one layout, one string escaping and one spelling of non-finite numbers:
//
//   [ {"frame": {"name": N, "type": T, <frame fields>}, "metrics": {...},
//      "metric_rules": {"peak": "exc", ...},      (root only, when a metric has a rule)
//      "children": [ <node>, ... ]},
//     {"CUDA": {"0": {"arch": "90", "num_sms": 132, "clock_rate": ..., "memory_clock_rate": ...,
//                     "bus_width": ..., "warp_size": 32, "max_threads_per_sm": 2048, ...
//                     (the SM's limits, when known: hatchet_schema.h)}, ...}, "HIP": {...}} ]
//
// W is JsonWriter or MsgpackWriter. Strings go out byte for byte: JSON escapes '"', '\\' and the
// control characters, and passes every other byte through, invalid UTF-8 included, so a name
// read from a file is written back as it was. Non-finite numbers: in JSON NaN is null and +-inf
// +-1e999; in msgpack they are float64 values.
//
// Calls follow the document. A node's sections (frame, metrics, rules, children) close as a
// later one starts, so a node with no metrics still gets "metrics": {} and a leaf "children": []:
//
//   e.begin_profile();
//   e.begin_node("ROOT");  e.frame_field("rank", int64_t{3});  e.metric("count", uint64_t{0});
//   e.metric_rule("peak", HatchetRule::kExclusive);
//   e.begin_node("child");  e.end_node();
//   e.end_node();
//   e.begin_devices();  e.device({"CUDA", "0", "90", 132, ...});  e.end_devices();
//   e.end_profile();
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "format/hatchet_schema.h"
#include "format/metric_value_writer.h"

namespace proton::format {

// Whether metric() gets a metric variant (written by write_metric_value) or a plain value.
template <typename V>
inline constexpr bool is_variant = false;
template <typename... T>
inline constexpr bool is_variant<std::variant<T...>> = true;

// A number that may be integral: an integer when `integral` and in int64's range, else a double
// (NaN and infinities included). The viewer's values are doubles with this flag.
template <typename W>
void write_number(W& w, double v, bool integral) {
  if (integral && std::fabs(v) < 9.0e18) {
    w.value(static_cast<int64_t>(v));
  } else {
    w.value(v);
  }
}

template <typename W>
class HatchetEmitter {
 public:
  explicit HatchetEmitter(W& w) : w_(w) {}

  void begin_profile() { w_.begin_array(); }
  void end_profile() { w_.end_array(); }

  // Opens a node: the root, or a child of the innermost open node. An empty type is "function".
  void begin_node(std::string_view name, std::string_view type = {}) {
    if (depth_ > 0) advance(Section::kChildren);
    w_.begin_object();
    w_.key("frame").begin_object();
    w_.key("name").value(name);
    w_.key("type").value(type.empty() ? std::string_view("function") : type);
    section_ = Section::kFrame;
    ++depth_;
  }
  void end_node() {
    advance(Section::kChildren);
    w_.end_array();
    w_.end_object();
    --depth_;
  }
  // The root of a profile without nodes: {}.
  void empty_root() { w_.begin_object().end_object(); }

  // A key of the frame beside "name" and "type" (the root's rank block): right after begin_node.
  template <typename V>
  void frame_field(std::string_view key, const V& value) {
    w_.key(key).value(value);
  }

  // One metric of the innermost node, before its rules and children. `value` is anything W
  // writes (integers, doubles, strings) or a metric variant (metric_value_writer.h).
  template <typename V>
  void metric(std::string_view name, const V& value) {
    advance(Section::kMetrics);
    w_.key(name);
    if constexpr (is_variant<V>) {
      write_metric_value(w_, value);
    } else {
      w_.value(value);
    }
  }
  void metric_number(std::string_view name, double value, bool integral) {
    advance(Section::kMetrics);
    w_.key(name);
    write_number(w_, value, integral);
  }

  // The rule of a metric written without its suffix: a key of the root, after its metrics.
  void metric_rule(std::string_view name, HatchetRule rule) {
    advance(Section::kRules);
    if (!rules_open_) w_.key("metric_rules").begin_object();
    rules_open_ = true;
    w_.key(name).value(rule == HatchetRule::kExclusive ? "exc" : "pty");
  }

  // The device map, after the root. Devices of one type must come together.
  void begin_devices() { w_.begin_object(); }
  void device(const HatchetDevice& d) {
    if (!type_open_ || d.type != type_) {
      if (type_open_) w_.end_object();
      w_.key(d.type).begin_object();
      type_.assign(d.type);
      type_open_ = true;
    }
    w_.key(d.id).begin_object();
    w_.key("arch").value(d.arch);
    w_.key("num_sms");
    write_number(w_, d.num_sms, true);
    w_.key("clock_rate");
    write_number(w_, d.clock_rate_khz, true);
    w_.key("memory_clock_rate");
    write_number(w_, d.memory_clock_rate_khz, true);
    w_.key("bus_width");
    write_number(w_, d.bus_width_bits, true);
    if (d.max_threads_per_sm > 0) {
      // The SM's limits (occupancy): extra keys, which Triton's viewer and older readers skip.
      for (auto [key, v] :
           {std::pair<const char*, double>{"warp_size", d.warp_size},
            {"max_threads_per_sm", d.max_threads_per_sm},
            {"max_warps_per_sm", d.max_warps_per_sm},
            {"max_blocks_per_sm", d.max_blocks_per_sm},
            {"registers_per_sm", d.registers_per_sm},
            {"shared_memory_per_sm", d.shared_memory_per_sm},
            {"reserved_shared_memory_per_block", d.reserved_shared_memory_per_block}}) {
        w_.key(key);
        write_number(w_, v, true);
      }
    }
    w_.end_object();
  }
  void end_devices() {
    if (type_open_) w_.end_object();
    type_open_ = false;
    w_.end_object();
  }

 private:
  enum class Section : uint8_t { kFrame, kMetrics, kRules, kChildren };

  // Closes the innermost node's sections up to `to`, opening the ones a node always has.
  void advance(Section to) {
    if (section_ == Section::kFrame && to > Section::kFrame) {
      w_.end_object();
      w_.key("metrics").begin_object();
      section_ = Section::kMetrics;
    }
    if (section_ == Section::kMetrics && to > Section::kMetrics) {
      w_.end_object();
      section_ = Section::kRules;
    }
    if (section_ == Section::kRules && to > Section::kRules) {
      if (rules_open_) w_.end_object();
      rules_open_ = false;
      w_.key("children").begin_array();
      section_ = Section::kChildren;
    }
  }

  W& w_;
  Section section_ = Section::kChildren;  // of the innermost open node
  size_t depth_ = 0;
  bool rules_open_ = false;
  std::string type_;  // of the device group open in the map
  bool type_open_ = false;
};

// Writes the nodes of a tree depth first, without recursion (call paths can be deep): open(id)
// begins node `id` and writes what precedes its children (frame fields, metrics, rules);
// children(id) is the range of its children's ids, in order.
template <typename W, typename Id, typename Children, typename Open>
void write_tree(HatchetEmitter<W>& e, Id root, Children&& children, Open&& open) {
  struct Frame {
    Id id;
    size_t next;
  };
  std::vector<Frame> stack;
  open(root);
  stack.push_back({root, 0});
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& kids = children(f.id);
    if (f.next < std::size(kids)) {
      Id child = static_cast<Id>(kids[f.next++]);  // before the push, which may reallocate
      open(child);
      stack.push_back({child, 0});
    } else {
      e.end_node();
      stack.pop_back();
    }
  }
}

}  // namespace proton::format
