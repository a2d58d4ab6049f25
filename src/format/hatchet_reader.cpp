#include "format/hatchet_reader.h"

#include <limits>
#include <utility>

#include "format/json_cursor.h"
#include "format/msgpack_cursor.h"
#include "format/outside_number.h"

namespace proton::format {

namespace {

bool is_number_start(char c) {
  return c == '-' || (c >= '0' && c <= '9');
}

// One document through one cursor. Keys, names and string values are read into buffers kept
// across the whole document, so a file costs no allocation per node here.
template <class Cursor>
class Reader {
 public:
  Reader(std::string_view text, HatchetSink& sink) : cursor_(text), sink_(sink) {}

  void read() {
    try {
      read_document();
    } catch (const SinkError& e) {
      cursor_.fail(e.what());
    }
  }

 private:
  void read_document() {
    if (cursor_.peek() != '[') {
      cursor_.fail("a profile must be a JSON array [root, device_map], found " + found());
    }
    cursor_.expect('[', "'['");
    if (cursor_.peek() == ']') cursor_.fail("empty array: the profile has no root node");
    read_node(-1, 0);
    if (cursor_.consume(',')) read_device_map();
    if (cursor_.peek() == ',') cursor_.fail("more than two elements: expected [root, device_map]");
    cursor_.expect(']', "']' closing [root, device_map]");
    cursor_.expect_end();
    sink_.run(std::move(run_));
  }

  std::string found() { return std::string(cursor_.next_type_name()); }

  // Reads the next key (a string) and its ':' into key_.
  void read_key(std::string_view after) {
    key_.clear();
    cursor_.read_string_into(key_);
    cursor_.expect(':', after);
  }

  void read_node(int32_t parent, int depth) {
    if (depth > kMaxTreeDepth) {
      cursor_.fail("call tree deeper than " + std::to_string(kMaxTreeDepth) + " levels");
    }
    size_t start = cursor_.offset();
    if (cursor_.peek() != '{') cursor_.fail("expected a node object, found " + found());
    cursor_.expect('{', "'{'");
    int32_t id = nodes_++;
    sink_.node(parent);
    bool has_frame = false;
    if (!cursor_.consume('}')) {
      do {
        read_key("':' after a key");
        if (key_ == "frame") {
          read_frame(id);
          has_frame = true;
        } else if (key_ == "metrics") {
          read_metrics(id);
        } else if (key_ == "children") {
          read_children(id, depth);
        } else if (key_ == "metric_rules" && id == 0) {
          read_metric_rules();
        } else {
          cursor_.skip_value(depth);  // unknown keys are tolerated for forward compatibility
        }
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a node");
    }
    if (!has_frame) Cursor::fail_at(start, "node has no \"frame\"");
  }

  // Proton's root key {"<metric>": "exc" | "pty"}: the rule of metrics whose "(exc)"/"(pty)"
  // suffix the writer removed from the name, as triton.profiler does. Other values: ignored.
  void read_metric_rules() {
    if (cursor_.peek() != '{') cursor_.fail("\"metric_rules\" must be an object, found " + found());
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      read_key("':' after a metric name");
      if (cursor_.peek() != '"') {
        cursor_.skip_value(2);
        continue;
      }
      value_.clear();
      cursor_.read_string_into(value_);
      if (value_ == "exc") sink_.declared_kind(key_, HatchetRule::kExclusive);
      if (value_ == "pty") sink_.declared_kind(key_, HatchetRule::kProperty);
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in metric_rules");
  }

  void read_frame(int32_t id) {
    if (cursor_.peek() != '{') cursor_.fail("\"frame\" must be an object, found " + found());
    size_t start = cursor_.offset();
    cursor_.expect('{', "'{'");
    bool has_name = false;
    if (!cursor_.consume('}')) {
      do {
        read_key("':' after a key");
        if (key_ == "name" || key_ == "type") {
          if (cursor_.peek() != '"') {
            cursor_.fail("frame \"" + key_ + "\" must be a string, found " + found());
          }
          value_.clear();
          cursor_.read_string_into(value_);
          if (key_ == "name") {
            sink_.frame_name(id, value_);
            has_name = true;
          } else {
            sink_.frame_type(id, value_);
          }
        } else if (id == 0 && read_run_field()) {
          // the rank block of a multi-process run (src/io/run_info.h)
        } else {
          cursor_.skip_value(1);
        }
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a frame");
    }
    if (!has_name) Cursor::fail_at(start, "frame has no \"name\"");
  }

  // Reads the value of key_ in the root frame's rank block; false for keys that are not part of
  // it (or hold a value of the wrong type), which are then skipped like any unknown frame key.
  bool read_run_field() {
    char next = cursor_.peek();
    if (is_number_start(next) && (key_ == "rank" || key_ == "world_size" || key_ == "local_rank")) {
      JsonNumber n = cursor_.read_number();
      // Out-of-range or fractional values are not ranks: stored as unknown.
      int64_t v = n.integral && n.value >= 0 && n.value < 1e15 ? static_cast<int64_t>(n.value) : -1;
      (key_ == "rank" ? run_.rank : key_ == "world_size" ? run_.world_size : run_.local_rank) = v;
      return true;
    }
    if (next != '"') return false;
    std::string* field = key_ == "host"             ? &run_.host
                         : key_ == "device"         ? &run_.device
                         : key_ == "launcher"       ? &run_.launcher
                         : key_ == "proton_version" ? &run_.version
                                                    : nullptr;
    if (field == nullptr) return false;
    *field = cursor_.read_string();
    return true;
  }

  void read_metrics(int32_t id) {
    if (cursor_.peek() != '{') cursor_.fail("\"metrics\" must be an object, found " + found());
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      read_key("':' after a metric name");
      char next = cursor_.peek();
      if (next == '"') {
        // Strings are how Proton stores device ids and types; kept as attributes.
        value_.clear();
        cursor_.read_string_into(value_);
        sink_.text(id, key_, value_);
      } else if (next == '[') {
        read_array_metric(id);
      } else if (is_number_start(next)) {
        JsonNumber number = cursor_.read_number(/*metric_value=*/true);
        sink_.metric(id, key_, number.value, number.integral, /*from_array=*/false);
      } else if (next == 'n') {
        // null: a NaN (JSON has none; triton.profiler writes every non-finite value so).
        cursor_.skip_value();
        sink_.metric(id, key_, std::numeric_limits<double>::quiet_NaN(), /*integral=*/true,
                     /*from_array=*/false);
      } else {
        cursor_.fail("metric \"" + key_ + "\" must be a number, an array of numbers or a " +
                     "string, found " + found());
      }
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in metrics");
  }

  // Array metrics (per-element counters) are reported as their sum; key_ names the metric.
  void read_array_metric(int32_t id) {
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
        if (!is_number_start(next)) {
          cursor_.fail("array metric \"" + key_ + "\" must hold numbers, found " + found());
        }
        JsonNumber number = cursor_.read_number(/*metric_value=*/true);
        sum += number.value;
        integral &= number.integral;
      } while (cursor_.consume(','));
      cursor_.expect(']', "',' or ']' in an array metric");
    }
    sink_.metric(id, key_, sum, integral, /*from_array=*/true);
  }

  void read_children(int32_t id, int depth) {
    if (cursor_.peek() != '[') cursor_.fail("\"children\" must be an array, found " + found());
    cursor_.expect('[', "'['");
    if (cursor_.consume(']')) return;
    do {
      read_node(id, depth + 1);
    } while (cursor_.consume(','));
    cursor_.expect(']', "',' or ']' in children");
  }

  void read_device_map() {
    if (cursor_.peek() != '{') cursor_.fail("the device map must be an object, found " + found());
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      std::string type = cursor_.read_string();
      cursor_.expect(':', "':' after a device type");
      if (cursor_.peek() != '{') {
        cursor_.fail("devices of \"" + type + "\" must be an object, found " + found());
      }
      cursor_.expect('{', "'{'");
      if (cursor_.consume('}')) continue;
      do {
        HatchetDevice device;
        device.type = type;
        device.id = cursor_.read_string();
        cursor_.expect(':', "':' after a device id");
        read_device(device);
        sink_.device(std::move(device));
      } while (cursor_.consume(','));
      cursor_.expect('}', "',' or '}' in a device list");
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in the device map");
  }

  // The SM's limits, keys a file may lack (older files, triton.profiler's): absent stays 0.
  static double* sm_limit(HatchetDevice& d, std::string_view key) {
    if (key == "warp_size") return &d.warp_size;
    if (key == "max_threads_per_sm") return &d.max_threads_per_sm;
    if (key == "max_warps_per_sm") return &d.max_warps_per_sm;
    if (key == "max_blocks_per_sm") return &d.max_blocks_per_sm;
    if (key == "registers_per_sm") return &d.registers_per_sm;
    if (key == "shared_memory_per_sm") return &d.shared_memory_per_sm;
    if (key == "reserved_shared_memory_per_block") return &d.reserved_shared_memory_per_block;
    return nullptr;
  }

  void read_device(HatchetDevice& device) {
    if (cursor_.peek() != '{') {
      cursor_.fail("device \"" + device.id + "\" must be an object, found " + found());
    }
    cursor_.expect('{', "'{'");
    if (cursor_.consume('}')) return;
    do {
      read_key("':' after a key");
      char next = cursor_.peek();
      if (key_ == "arch" && next == '"') {
        device.arch = cursor_.read_string();
      } else if (is_number_start(next)) {
        size_t at = cursor_.offset();
        double v = cursor_.read_number().value;
        if (key_ == "arch") {
          device.arch = std::to_string(
              whole_number(v, at, "device \"" + device.id + "\" \"arch\"", 0, kMaxExactInteger));
        } else if (key_ == "num_sms") {
          device.num_sms = v;
        } else if (key_ == "clock_rate") {
          device.clock_rate_khz = v;
        } else if (key_ == "memory_clock_rate") {
          device.memory_clock_rate_khz = v;
        } else if (key_ == "bus_width") {
          device.bus_width_bits = v;
        } else if (double* limit = sm_limit(device, key_)) {
          *limit = v;
        }
      } else {
        cursor_.skip_value(3);
      }
    } while (cursor_.consume(','));
    cursor_.expect('}', "',' or '}' in a device");
  }

  Cursor cursor_;
  HatchetSink& sink_;
  int32_t nodes_ = 0;
  std::string key_, value_;
  HatchetRun run_;
};

}  // namespace

void read_hatchet(std::string_view text, HatchetSink& sink) {
  constexpr std::string_view kBom = "\xef\xbb\xbf";
  size_t skip = text.starts_with(kBom) ? kBom.size() : 0;
  std::string_view body = text.substr(skip);
  try {
    if (looks_like_msgpack(body)) {
      Reader<MsgpackCursor>(body, sink).read();
    } else {
      Reader<JsonCursor>(body, sink).read();
    }
  } catch (const InputError& e) {
    if (skip == 0) throw;
    throw InputError(e.offset() + skip, e.what());
  }
}

}  // namespace proton::format
