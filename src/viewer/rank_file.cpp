#include "viewer/rank_file.h"

#include <cmath>
#include <limits>

#include "format/json_cursor.h"
#include "viewer/hatchet_reader.h"
#include "viewer/outside_number.h"

namespace proton::viewer {

namespace {

bool is_number_start(char c) {
  return c == '-' || (c >= '0' && c <= '9');
}

template <class Cursor>
class RankFileParser {
 public:
  RankFileParser(std::string_view text, RankFile& out) : c_(text), f_(out) {
    f_.arena.clear();
    f_.nodes.clear();
    f_.values.clear();
    f_.texts.clear();
    f_.metrics.clear();
    f_.devices.clear();
    f_.run = RunMeta{};
  }

  void parse() {
    if (c_.peek() != '[') {
      c_.fail("a profile must be a JSON array [root, device_map], found " +
              std::string(c_.next_type_name()));
    }
    c_.expect('[', "'['");
    if (c_.peek() == ']') c_.fail("empty array: the profile has no root node");
    parse_node(-1, 0);
    if (c_.consume(',')) parse_device_map();
    if (c_.peek() == ',') c_.fail("more than two elements: expected [root, device_map]");
    c_.expect(']', "']' closing [root, device_map]");
    c_.expect_end();
  }

 private:
  RankFile::Span string_span() {
    // Spans are 32-bit: names beyond 4 GiB in all are refused rather than wrapped.
    if (f_.arena.size() > UINT32_MAX) c_.fail("names longer than 4 GiB in all");
    auto offset = static_cast<uint32_t>(f_.arena.size());
    c_.read_string_into(f_.arena);
    if (f_.arena.size() > UINT32_MAX) c_.fail("names longer than 4 GiB in all");
    return {offset, static_cast<uint32_t>(f_.arena.size() - offset)};
  }

  int32_t metric_id(const std::string& name) {
    auto [it, fresh] = metric_of_.try_emplace(name, static_cast<int32_t>(f_.metrics.size()));
    if (fresh) f_.metrics.push_back(MetricInfo{name, metric_kind_of(name), true, false});
    return it->second;
  }

  void parse_node(int32_t parent, int depth) {
    if (depth > kMaxTreeDepth) {
      c_.fail("call tree deeper than " + std::to_string(kMaxTreeDepth) + " levels");
    }
    size_t start = c_.offset();
    if (c_.peek() != '{')
      c_.fail("expected a node object, found " + std::string(c_.next_type_name()));
    c_.expect('{', "'{'");
    auto id = static_cast<int32_t>(f_.nodes.size());
    f_.nodes.push_back({{}, {}, parent});
    bool has_frame = false;
    if (!c_.consume('}')) {
      do {
        key_.clear();
        c_.read_string_into(key_);
        c_.expect(':', "':' after a key");
        if (key_ == "frame") {
          parse_frame(id);
          has_frame = true;
        } else if (key_ == "metrics") {
          parse_metrics(id);
        } else if (key_ == "children") {
          if (c_.peek() != '[') {
            c_.fail("\"children\" must be an array, found " + std::string(c_.next_type_name()));
          }
          c_.expect('[', "'['");
          if (!c_.consume(']')) {
            do {
              parse_node(id, depth + 1);
            } while (c_.consume(','));
            c_.expect(']', "',' or ']' in children");
          }
        } else if (key_ == "metric_rules" && id == 0) {
          // The rules do not change a merge, but the file is refused as the full reader does.
          if (c_.peek() != '{') {
            c_.fail("\"metric_rules\" must be an object, found " +
                    std::string(c_.next_type_name()));
          }
          c_.skip_value(depth);
        } else {
          c_.skip_value(depth);
        }
      } while (c_.consume(','));
      c_.expect('}', "',' or '}' in a node");
    }
    if (!has_frame) Cursor::fail_at(start, "node has no \"frame\"");
  }

  void parse_frame(int32_t id) {
    if (c_.peek() != '{') {
      c_.fail("\"frame\" must be an object, found " + std::string(c_.next_type_name()));
    }
    size_t start = c_.offset();
    c_.expect('{', "'{'");
    bool has_name = false;
    if (!c_.consume('}')) {
      do {
        key_.clear();
        c_.read_string_into(key_);
        c_.expect(':', "':' after a key");
        char next = c_.peek();
        if (key_ == "name" || key_ == "type") {
          if (next != '"') {
            c_.fail("frame \"" + key_ + "\" must be a string, found " +
                    std::string(c_.next_type_name()));
          }
          RankFile::Span s = string_span();
          auto& node = f_.nodes[static_cast<size_t>(id)];
          (key_ == "name" ? node.name : node.type) = s;
          has_name |= key_ == "name";
        } else if (id == 0 && is_number_start(next) &&
                   (key_ == "rank" || key_ == "world_size" || key_ == "local_rank")) {
          JsonNumber n = c_.read_number();
          int64_t v =
              n.integral && n.value >= 0 && n.value < 1e15 ? static_cast<int64_t>(n.value) : -1;
          (key_ == "rank"         ? f_.run.rank
           : key_ == "world_size" ? f_.run.world_size
                                  : f_.run.local_rank) = v;
        } else if (id == 0 && next == '"' &&
                   (key_ == "host" || key_ == "device" || key_ == "launcher" ||
                    key_ == "proton_version")) {
          std::string value = c_.read_string();
          (key_ == "host"       ? f_.run.host
           : key_ == "device"   ? f_.run.device
           : key_ == "launcher" ? f_.run.launcher
                                : f_.run.version) = std::move(value);
        } else {
          c_.skip_value(1);
        }
      } while (c_.consume(','));
      c_.expect('}', "',' or '}' in a frame");
    }
    if (!has_name) Cursor::fail_at(start, "frame has no \"name\"");
  }

  void parse_metrics(int32_t id) {
    if (c_.peek() != '{') {
      c_.fail("\"metrics\" must be an object, found " + std::string(c_.next_type_name()));
    }
    c_.expect('{', "'{'");
    if (c_.consume('}')) return;
    do {
      name_.clear();
      c_.read_string_into(name_);
      c_.expect(':', "':' after a metric name");
      char next = c_.peek();
      if (next == '"') {
        auto offset = static_cast<uint32_t>(f_.arena.size());
        f_.arena += name_;
        RankFile::Span key{offset, static_cast<uint32_t>(name_.size())};
        f_.texts.push_back({id, key, string_span()});
      } else if (next == '[') {
        c_.expect('[', "'['");
        double sum = 0;
        bool integral = true;
        if (!c_.consume(']')) {
          do {
            if (c_.peek() == 'n') {  // null: a NaN element
              c_.skip_value();
              sum += std::numeric_limits<double>::quiet_NaN();
              continue;
            }
            if (!is_number_start(c_.peek())) {
              c_.fail("array metric \"" + name_ + "\" must hold numbers, found " +
                      std::string(c_.next_type_name()));
            }
            JsonNumber n = c_.read_number(/*metric_value=*/true);
            sum += n.value;
            integral &= n.integral;
          } while (c_.consume(','));
          c_.expect(']', "',' or ']' in an array metric");
        }
        int32_t m = metric_id(name_);
        f_.metrics[static_cast<size_t>(m)].integral &= integral;
        f_.metrics[static_cast<size_t>(m)].from_array = true;
        f_.values.push_back({id, m, sum});
      } else if (is_number_start(next)) {
        JsonNumber n = c_.read_number(/*metric_value=*/true);
        int32_t m = metric_id(name_);
        f_.metrics[static_cast<size_t>(m)].integral &= n.integral;
        f_.values.push_back({id, m, n.value});
      } else if (next == 'n') {  // null: a NaN, as in the Hatchet reader
        c_.skip_value();
        f_.values.push_back({id, metric_id(name_), std::numeric_limits<double>::quiet_NaN()});
      } else {
        c_.fail("metric \"" + name_ + "\" must be a number, an array of numbers or a string, " +
                "found " + std::string(c_.next_type_name()));
      }
    } while (c_.consume(','));
    c_.expect('}', "',' or '}' in metrics");
  }

  void parse_device_map() {
    if (c_.peek() != '{') {
      c_.fail("the device map must be an object, found " + std::string(c_.next_type_name()));
    }
    c_.expect('{', "'{'");
    if (c_.consume('}')) return;
    do {
      std::string type = c_.read_string();
      c_.expect(':', "':' after a device type");
      if (c_.peek() != '{') {
        c_.fail("devices of \"" + type + "\" must be an object, found " +
                std::string(c_.next_type_name()));
      }
      c_.expect('{', "'{'");
      if (c_.consume('}')) continue;
      do {
        DeviceInfo d;
        d.type = type;
        d.id = c_.read_string();
        c_.expect(':', "':' after a device id");
        if (c_.peek() != '{') {
          c_.fail("device \"" + d.id + "\" must be an object, found " +
                  std::string(c_.next_type_name()));
        }
        c_.expect('{', "'{'");
        if (!c_.consume('}')) {
          do {
            std::string key = c_.read_string();
            c_.expect(':', "':' after a key");
            char next = c_.peek();
            if (key == "arch" && next == '"') {
              d.arch = c_.read_string();
            } else if (is_number_start(next)) {
              size_t at = c_.offset();
              double v = c_.read_number().value;
              if (key == "arch") {
                d.arch = std::to_string(
                    whole_number(v, at, "device \"" + d.id + "\" \"arch\"", 0, kMaxExactInteger));
              }
              if (key == "num_sms") d.num_sms = v;
              if (key == "clock_rate") d.clock_rate_khz = v;
              if (key == "memory_clock_rate") d.memory_clock_rate_khz = v;
              if (key == "bus_width") d.bus_width_bits = v;
            } else {
              c_.skip_value(3);
            }
          } while (c_.consume(','));
          c_.expect('}', "',' or '}' in a device");
        }
        f_.devices.push_back(std::move(d));
      } while (c_.consume(','));
      c_.expect('}', "',' or '}' in a device list");
    } while (c_.consume(','));
    c_.expect('}', "',' or '}' in the device map");
  }

  Cursor c_;
  RankFile& f_;
  std::string key_, name_;
  std::unordered_map<std::string, int32_t> metric_of_;
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
  parse_either(text, [&out](auto cursor_tag, std::string_view body) {
    RankFileParser<typename decltype(cursor_tag)::type>(body, out).parse();
    return 0;
  });
}

RankFile parse_rank_file(std::string_view text) {
  RankFile out;
  parse_rank_file(text, out);
  return out;
}

}  // namespace proton::viewer
