#include "viewer/hatchet_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace proton::viewer {

namespace {

class HatchetParser {
 public:
  explicit HatchetParser(std::string_view text) : cursor_(text) {}

  Profile parse() {
    if (cursor_.peek() != '[') {
      cursor_.fail("a profile must be a JSON array [root, device_map], found " +
                   std::string(cursor_.next_type_name()));
    }
    cursor_.expect('[', "'['");
    if (cursor_.peek() == ']') cursor_.fail("empty array: the profile has no root node");
    parse_node(-1, 0);
    if (cursor_.consume(',')) parse_device_map();
    if (cursor_.peek() == ',') cursor_.fail("more than two elements: expected [root, device_map]");
    cursor_.expect(']', "']' closing [root, device_map]");
    cursor_.expect_end();
    return std::move(profile_);
  }

 private:
  void parse_node(int32_t parent, int depth) {
    if (depth > kMaxTreeDepth) {
      cursor_.fail("call tree deeper than " + std::to_string(kMaxTreeDepth) + " levels");
    }
    size_t start = cursor_.offset();
    if (cursor_.peek() != '{') {
      cursor_.fail("expected a node object, found " + std::string(cursor_.next_type_name()));
    }
    cursor_.expect('{', "'{'");
    int32_t id = profile_.add_node(parent, "", "");
    bool has_frame = false;
    if (!cursor_.consume('}')) {
      do {
        std::string key = cursor_.read_string();
        cursor_.expect(':', "':' after a key");
        if (key == "frame") {
          parse_frame(id);
          has_frame = true;
        } else if (key == "metrics") {
          parse_metrics(id);
        } else if (key == "children") {
          parse_children(id, depth);
        } else if (key == "metric_rules" && id == 0) {
          parse_metric_rules();
        } else {
          cursor_.skip_value(depth);  // unknown keys are tolerated for forward compatibility
        }
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a node");
    }
    if (!has_frame) JsonCursor::fail_at(start, "node has no \"frame\"");
  }

  // Proton's root key {"<metric>": "exc" | "pty"}: the rule of metrics whose "(exc)"/"(pty)"
  // suffix the writer removed from the name, as triton.profiler does. Other values: ignored.
  void parse_metric_rules() {
    if (cursor_.peek() != '{') {
      cursor_.fail("\"metric_rules\" must be an object, found " +
                   std::string(cursor_.next_type_name()));
    }
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      std::string name = cursor_.read_string();
      cursor_.expect(':', "':' after a metric name");
      if (cursor_.peek() != '"') {
        cursor_.skip_value(2);
        continue;
      }
      std::string rule = cursor_.read_string();
      if (rule == "exc") profile_.declare_kind(name, MetricKind::kExclusive);
      if (rule == "pty") profile_.declare_kind(name, MetricKind::kProperty);
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in metric_rules");
  }

  void parse_frame(int32_t id) {
    if (cursor_.peek() != '{') {
      cursor_.fail("\"frame\" must be an object, found " + std::string(cursor_.next_type_name()));
    }
    size_t start = cursor_.offset();
    cursor_.expect('{', "'{'");
    bool has_name = false;
    if (!cursor_.consume('}')) {
      do {
        std::string key = cursor_.read_string();
        cursor_.expect(':', "':' after a key");
        if (key == "name" || key == "type") {
          if (cursor_.peek() != '"') {
            cursor_.fail("frame \"" + key + "\" must be a string, found " +
                         std::string(cursor_.next_type_name()));
          }
          std::string value = cursor_.read_string();
          Node& n = profile_.nodes[static_cast<size_t>(id)];
          (key == "name" ? n.name : n.type) = std::move(value);
          has_name |= key == "name";
        } else if (id == 0 && parse_run_field(key)) {
          // the rank block of a multi-process run (src/io/run_info.h)
        } else {
          cursor_.skip_value(1);
        }
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a frame");
    }
    if (!has_name) JsonCursor::fail_at(start, "frame has no \"name\"");
  }

  // Reads one key of the root frame's rank block; false for keys that are not part of it (or
  // hold a value of the wrong type), which are then skipped like any unknown frame key.
  bool parse_run_field(const std::string& key) {
    RunMeta& run = profile_.run;
    char next = cursor_.peek();
    bool number = next == '-' || (next >= '0' && next <= '9');
    if (number && (key == "rank" || key == "world_size" || key == "local_rank")) {
      JsonNumber n = cursor_.read_number();
      // Out-of-range or fractional values are not ranks: stored as unknown.
      int64_t v = n.integral && n.value >= 0 && n.value < 1e15 ? static_cast<int64_t>(n.value) : -1;
      (key == "rank" ? run.rank : key == "world_size" ? run.world_size : run.local_rank) = v;
      return true;
    }
    if (next != '"') return false;
    std::string* field = key == "host"             ? &run.host
                         : key == "device"         ? &run.device
                         : key == "launcher"       ? &run.launcher
                         : key == "proton_version" ? &run.version
                                                   : nullptr;
    if (field == nullptr) return false;
    *field = cursor_.read_string();
    return true;
  }

  void parse_metrics(int32_t id) {
    if (cursor_.peek() != '{') {
      cursor_.fail("\"metrics\" must be an object, found " + std::string(cursor_.next_type_name()));
    }
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      std::string name = cursor_.read_string();
      cursor_.expect(':', "':' after a metric name");
      char next = cursor_.peek();
      if (next == '"') {
        // Strings are how Proton stores device ids and types; keep them as attributes.
        std::string value = cursor_.read_string();
        profile_.nodes[static_cast<size_t>(id)].text.emplace_back(std::move(name),
                                                                  std::move(value));
      } else if (next == '[') {
        parse_array_metric(id, name);
      } else if (next == '-' || (next >= '0' && next <= '9')) {
        JsonNumber number = cursor_.read_number(/*metric_value=*/true);
        int32_t metric = profile_.metric_id(name);
        profile_.metrics[static_cast<size_t>(metric)].integral &= number.integral;
        profile_.add_value(id, metric, number.value);
      } else if (next == 'n') {
        // null: a NaN (JSON has none; triton.profiler writes every non-finite value so).
        cursor_.skip_value();
        profile_.add_value(id, profile_.metric_id(name), std::numeric_limits<double>::quiet_NaN());
      } else {
        cursor_.fail("metric \"" + name + "\" must be a number, an array of numbers or a " +
                     "string, found " + std::string(cursor_.next_type_name()));
      }
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in metrics");
  }

  // Array metrics (per-element counters) are shown by their sum.
  void parse_array_metric(int32_t id, const std::string& name) {
    cursor_.expect('[', "'['");
    double sum = 0;
    bool integral = true;
    if (!cursor_.consume(']')) {
      do {
        char next = cursor_.peek();
        if (next == 'n') {  // null: a NaN element, as for scalars
          cursor_.skip_value();
          sum += std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        if (next != '-' && (next < '0' || next > '9')) {
          cursor_.fail("array metric \"" + name + "\" must hold numbers, found " +
                       std::string(cursor_.next_type_name()));
        }
        JsonNumber number = cursor_.read_number(/*metric_value=*/true);
        sum += number.value;
        integral &= number.integral;
      } while (cursor_.consume(','));
      cursor_.expect(']', "',' or ']' in an array metric");
    }
    int32_t metric = profile_.metric_id(name);
    auto& info = profile_.metrics[static_cast<size_t>(metric)];
    info.integral &= integral;
    info.from_array = true;
    profile_.add_value(id, metric, sum);
  }

  void parse_children(int32_t id, int depth) {
    if (cursor_.peek() != '[') {
      cursor_.fail("\"children\" must be an array, found " + std::string(cursor_.next_type_name()));
    }
    cursor_.expect('[', "'['");
    if (cursor_.consume(']')) return;
    do {
      parse_node(id, depth + 1);
    } while (cursor_.consume(','));
    cursor_.expect(']', "',' or ']' in children");
  }

  void parse_device_map() {
    if (cursor_.peek() != '{') {
      cursor_.fail("the device map must be an object, found " +
                   std::string(cursor_.next_type_name()));
    }
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      std::string type = cursor_.read_string();
      cursor_.expect(':', "':' after a device type");
      if (cursor_.peek() != '{') {
        cursor_.fail("devices of \"" + type + "\" must be an object, found " +
                     std::string(cursor_.next_type_name()));
      }
      cursor_.expect('{', "'{'");
      if (cursor_.consume('}')) continue;
      do {
        DeviceInfo device;
        device.type = type;
        device.id = cursor_.read_string();
        cursor_.expect(':', "':' after a device id");
        parse_device(device);
        profile_.devices.push_back(std::move(device));
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a device list");
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in the device map");
  }

  void parse_device(DeviceInfo& device) {
    if (cursor_.peek() != '{') {
      cursor_.fail("device \"" + device.id + "\" must be an object, found " +
                   std::string(cursor_.next_type_name()));
    }
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      std::string key = cursor_.read_string();
      cursor_.expect(':', "':' after a key");
      char next = cursor_.peek();
      if (key == "arch" && next == '"') {
        device.arch = cursor_.read_string();
      } else if (next == '-' || (next >= '0' && next <= '9')) {
        JsonNumber number = cursor_.read_number();
        if (key == "arch") {
          device.arch = std::to_string(static_cast<long long>(number.value));
        } else if (key == "num_sms") {
          device.num_sms = number.value;
        } else if (key == "clock_rate") {
          device.clock_rate_khz = number.value;
        } else if (key == "memory_clock_rate") {
          device.memory_clock_rate_khz = number.value;
        } else if (key == "bus_width") {
          device.bus_width_bits = number.value;
        }
      } else {
        cursor_.skip_value(3);
      }
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in a device");
  }

  JsonCursor cursor_;
  Profile profile_;
};

}  // namespace

Profile parse_hatchet(std::string_view text) {
  return HatchetParser(text).parse();
}

std::string read_file(const std::string& path) {
  std::string text;
  read_file_into(path, text);
  return text;
}

void read_file_into(const std::string& path, std::string& text) {
  // Straight into one buffer of the file's size: merging many rank files keeps one at a time,
  // and a stream copy would hold it twice.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw FileError(path + ": cannot open: " + std::strerror(errno));
  text.clear();
  char chunk[1 << 16];
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    if (size > 0) text.reserve(static_cast<size_t>(size));
    std::rewind(f);
  }
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    text.append(chunk, n);
  bool failed = std::ferror(f) != 0;
  int error = errno;
  std::fclose(f);
  if (failed) throw FileError(path + ": cannot read: " + std::strerror(error));
}

Profile load_hatchet(const std::string& path) {
  std::string text = read_file(path);
  if (!text.empty() && (static_cast<unsigned char>(text[0]) == 0x92 ||
                        static_cast<unsigned char>(text[0]) == 0xdc)) {
    throw FileError(path + ":0: this looks like a msgpack profile; write it as JSON " +
                    "(finalize(output_format=\"hatchet\")) to view it");
  }
  try {
    return parse_hatchet(text);
  } catch (const InputError& e) {
    throw FileError(path + ":" + std::to_string(e.offset()) + ": " + e.what());
  }
}

}  // namespace proton::viewer
