#include "viewer/hatchet_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#include "viewer/outside_number.h"

namespace proton::viewer {

namespace {

template <class Cursor>
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
    if (!has_frame) Cursor::fail_at(start, "node has no \"frame\"");
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
    if (!has_name) Cursor::fail_at(start, "frame has no \"name\"");
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
        size_t at = cursor_.offset();
        JsonNumber number = cursor_.read_number();
        if (key == "arch") {
          device.arch = std::to_string(whole_number(
              number.value, at, "device \"" + device.id + "\" \"arch\"", 0, kMaxExactInteger));
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

  Cursor cursor_;
  Profile profile_;
};

}  // namespace

Profile parse_hatchet(std::string_view text) {
  return parse_either(text, [](auto cursor_tag, std::string_view body) {
    return HatchetParser<typename decltype(cursor_tag)::type>(body).parse();
  });
}

std::string read_file(const std::string& path) {
  std::string text;
  read_file_into(path, text);
  return text;
}

void read_file_into(const std::string& path, std::string& text) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. The file's type
  // is then checked on the open descriptor, so nothing can be swapped in between.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw FileError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int error = errno;
    ::close(fd);
    throw FileError(path + ": cannot read: " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                                              : "not a regular file";
    throw FileError(path + ": " + what + ", not a profile file");
  }
  // Straight into one buffer of the file's size: merging many rank files keeps one at a time,
  // and a stream copy would hold it twice.
  text.clear();
  try {
    if (st.st_size > 0) text.reserve(static_cast<size_t>(st.st_size));
    char chunk[1 << 16];
    for (;;) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        int error = errno;
        ::close(fd);
        throw FileError(path + ": cannot read: " + std::strerror(error));
      }
      text.append(chunk, static_cast<size_t>(n));
    }
  } catch (const std::bad_alloc&) {
    ::close(fd);
    throw FileError(path + ": cannot read: " + std::to_string(st.st_size) +
                    " bytes do not fit in memory");
  }
  ::close(fd);
}

std::string not_a_profile(std::string_view text) {
  if (text.empty()) return "an empty file, not a profile";
  auto byte = [&](size_t i) { return i < text.size() ? static_cast<uint8_t>(text[i]) : 0; };
  if (byte(0) == 0x1f && byte(1) == 0x8b) {
    return "gzip-compressed data, not a profile (decompress it first: gunzip)";
  }
  if (byte(0) == 0x28 && byte(1) == 0xb5 && byte(2) == 0x2f && byte(3) == 0xfd) {
    return "zstd-compressed data, not a profile (decompress it first: unzstd)";
  }
  if (text.starts_with("PK\x03\x04")) return "a zip archive, not a profile (unzip it first)";
  std::string_view body = text.starts_with("\xef\xbb\xbf") ? text.substr(3) : text;
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "only whitespace, not a profile";
  auto c = static_cast<uint8_t>(body[first]);
  if (looks_like_msgpack(body) || c == '[') {
    // A Chrome trace is an object, or (an older form) an array of events with "ph".
    if (c == '[' && body.substr(first, 4096).find("\"ph\"") != std::string_view::npos &&
        body.substr(first, 4096).find("\"frame\"") == std::string_view::npos) {
      return "a Chrome trace (an array of events), not a Hatchet profile; view it in Perfetto "
             "or chrome://tracing, or merge per-rank traces with `proton-viewer merge "
             "--output-format trace`";
    }
    return "";
  }
  if (c == '{') {
    if (body.substr(first, 4096).find("\"traceEvents\"") != std::string_view::npos) {
      return "a Chrome trace, not a Hatchet profile; view it in Perfetto or chrome://tracing, "
             "or merge per-rank traces with `proton-viewer merge --output-format trace`";
    }
    return "";  // the parser names the object
  }
  if (c < 0x20 || c >= 0x7f) {
    static constexpr char kHex[] = "0123456789abcdef";
    return std::string("binary data (first byte 0x") + kHex[c >> 4] + kHex[c & 15] +
           "), not a Hatchet profile (JSON or msgpack)";
  }
  return "";
}

Profile load_hatchet(const std::string& path) {
  std::string text = read_file(path);
  return parse_file_text(path, text, [](std::string_view t) { return parse_hatchet(t); });
}

}  // namespace proton::viewer
