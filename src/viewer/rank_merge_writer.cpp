// RankMerger::write_json: the merged profile streamed to disk from the running statistics.
// Building it as a Profile and then a JSON document first (profile_writer.h) costs about ten
// times the output's size in memory; at 1,024 ranks that was most of the merge's peak.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "format/json_writer.h"
#include "viewer/hatchet_reader.h"
#include "viewer/rank_merge.h"

namespace proton::viewer {

namespace {

class Sink {
 public:
  explicit Sink(const std::string& path)
      : path_(path), temp_(path + ".tmp." + std::to_string(::getpid())) {
    file_ = std::fopen(temp_.c_str(), "wb");
    if (file_ == nullptr) throw FileError(temp_ + ": cannot create: " + std::strerror(errno));
    buf_.reserve(kFlushAt + 4096);
  }
  ~Sink() {
    if (file_ != nullptr) {
      std::fclose(file_);
      std::remove(temp_.c_str());
    }
  }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushAt) flush();
  }
  void commit() {
    flush();
    bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    int error = errno;
    if (failed_ || !closed || std::rename(temp_.c_str(), path_.c_str()) != 0) {
      if (!failed_ && closed) error = errno;
      std::remove(temp_.c_str());
      throw FileError(path_ + ": cannot write: " + std::strerror(error));
    }
  }

 private:
  static constexpr size_t kFlushAt = 1 << 16;
  void flush() {
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size())
      failed_ = true;
    buf_.clear();
  }
  std::string path_, temp_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  std::string buf_;
};

void put_string(std::string& out, std::string_view s) {
  bool plain = true;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    plain &= u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  }
  if (plain) {
    out.push_back('"');
    out.append(s);
    out.push_back('"');
    return;
  }
  // Escapes and non-ASCII (which may be invalid UTF-8 from a file): as profile_writer does.
  out +=
      nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The format library's numbers: the same text as the engine's Hatchet files.
void put_number(std::string& out, double v, bool integral) {
  if (integral && std::isfinite(v) && std::fabs(v) < 9.0e18) {
    JsonWriter::append_int(out, static_cast<int64_t>(v));
  } else {
    JsonWriter::append_double(out, v);
  }
}

}  // namespace

void RankMerger::write_json(const std::string& path) const {
  Sink sink(path);
  std::string& out = sink.buf();
  std::vector<Column> cols = columns();
  out.push_back('[');
  struct Frame {
    size_t node;
    size_t next;
  };
  std::vector<Frame> stack;
  auto open = [&](size_t i) {
    const Node& n = tree_.nodes[i];
    out += "{\"frame\":{\"name\":";
    put_string(out, n.name);
    out += ",\"type\":";
    put_string(out, n.type.empty() ? "function" : n.type);
    out += "},\"metrics\":{";
    bool first = true;
    for (const Column& c : cols) {
      double v = value(i, c);
      if (is_absent(v)) continue;
      if (!first) out.push_back(',');
      first = false;
      put_string(out, c.name);
      out.push_back(':');
      put_number(out, v, c.integral);
    }
    for (const auto& [key, text] : text_of(i)) {
      if (!first) out.push_back(',');
      first = false;
      put_string(out, key);
      out.push_back(':');
      put_string(out, text);
    }
    out += "},\"children\":[";
    stack.push_back({i, 0});
    sink.maybe_flush();
  };
  if (!tree_.nodes.empty()) open(0);
  while (!stack.empty()) {
    Frame& f = stack.back();
    const auto& kids = tree_.nodes[f.node].children;
    if (f.next < kids.size()) {
      if (f.next > 0) out.push_back(',');
      open(static_cast<size_t>(kids[f.next++]));  // may reallocate: f is not used after
    } else {
      out += "]}";
      stack.pop_back();
    }
  }
  if (tree_.nodes.empty()) out += "{}";
  out += ",{";
  // Device map, grouped by type as profile_writer writes it.
  std::vector<std::string> types;
  for (const DeviceInfo& d : tree_.devices) {
    if (std::find(types.begin(), types.end(), d.type) == types.end()) types.push_back(d.type);
  }
  for (size_t t = 0; t < types.size(); ++t) {
    if (t) out.push_back(',');
    put_string(out, types[t]);
    out += ":{";
    bool first = true;
    for (const DeviceInfo& d : tree_.devices) {
      if (d.type != types[t]) continue;
      if (!first) out.push_back(',');
      first = false;
      put_string(out, d.id);
      out += ":{\"arch\":";
      put_string(out, d.arch);
      out += ",\"num_sms\":";
      put_number(out, d.num_sms, true);
      out += ",\"clock_rate\":";
      put_number(out, d.clock_rate_khz, true);
      out += ",\"memory_clock_rate\":";
      put_number(out, d.memory_clock_rate_khz, true);
      out += ",\"bus_width\":";
      put_number(out, d.bus_width_bits, true);
      out += "}";
    }
    out += "}";
  }
  out += "}]\n";
  sink.commit();
}

}  // namespace proton::viewer
