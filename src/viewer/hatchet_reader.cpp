#include "viewer/hatchet_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#include "format/msgpack_cursor.h"

namespace proton::viewer {

namespace {

// Builds the full tree.
class ProfileSink final : public format::HatchetSink {
 public:
  explicit ProfileSink(Profile& profile) : p_(profile) {}

  void node(int32_t parent) override { p_.add_node(parent, "", ""); }
  void frame_name(int32_t node, std::string_view name) override { at(node).name = name; }
  void frame_type(int32_t node, std::string_view type) override { at(node).type = type; }
  void metric(int32_t node, std::string_view name, double value, bool integral,
              bool from_array) override {
    int32_t metric = p_.metric_id(name);
    MetricInfo& info = p_.metrics[static_cast<size_t>(metric)];
    info.integral &= integral;
    info.from_array |= from_array;
    p_.add_value(node, metric, value);
  }
  void text(int32_t node, std::string_view name, std::string_view value) override {
    at(node).text.emplace_back(name, value);
  }
  void declared_kind(std::string_view metric, format::HatchetRule kind) override {
    p_.declare_kind(metric, kind == format::HatchetRule::kExclusive ? MetricKind::kExclusive
                                                                    : MetricKind::kProperty);
  }
  void device(DeviceInfo&& device) override { p_.devices.push_back(std::move(device)); }
  void run(RunMeta&& run) override { p_.run = std::move(run); }

 private:
  Node& at(int32_t node) { return p_.nodes[static_cast<size_t>(node)]; }

  Profile& p_;
};

}  // namespace

Profile parse_hatchet(std::string_view text) {
  Profile profile;
  ProfileSink sink(profile);
  format::read_hatchet(text, sink);
  return profile;
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
  if (format::looks_like_msgpack(body) || c == '[') {
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
