// RankMerger::write_json: the merged profile streamed to disk from the running statistics.
// Building it as a Profile first (result()) holds every column of every node at once; at 1,024
// ranks that was most of the merge's peak. The nodes and device map go through the same writer
// as to_hatchet_json (profile_writer.h), so both write result() with the same bytes.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "viewer/hatchet_reader.h"
#include "viewer/profile_writer.h"
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

}  // namespace

void RankMerger::write_json(const std::string& path) const {
  Sink sink(path);
  JsonWriter w(sink.buf());  // the sink empties the buffer as it fills: JsonWriter keeps no offsets
  HatchetJson e(w);
  std::vector<Column> cols = columns();
  e.begin_profile();
  write_nodes(e, tree_, [&](size_t i) {
    for (const Column& c : cols) {
      double v = value(i, c);
      if (!is_absent(v)) e.metric_number(c.name, v, c.integral);
    }
    for (const auto& [key, text] : text_of(i))
      e.metric(key, std::string_view(text));
    // A kind the name does not say (declared by the files' metric_rules) is declared again, as
    // to_hatchet_json declares it for result().
    for (size_t k = 0; i == 0 && k < metrics_.size(); ++k) {
      const MetricState& st = metrics_[k];
      if (st.kind == metric_kind_of(st.name) || st.kind == MetricKind::kInclusive) continue;
      e.metric_rule(st.name, st.kind == MetricKind::kExclusive ? format::HatchetRule::kExclusive
                                                               : format::HatchetRule::kProperty);
    }
    sink.maybe_flush();
  });
  write_device_map(e, tree_.devices);
  e.end_profile();
  sink.buf().push_back('\n');
  sink.commit();
}

}  // namespace proton::viewer
