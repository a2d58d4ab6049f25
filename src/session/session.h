// One profiling session: its configuration, its call tree, its output path.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/ids.h"
#include "data/call_tree.h"

namespace proton {

struct SessionConfig {
  std::string name = "proton";  // output path without extension (an extension is kept)
  std::string context = "shadow";
  std::string data = "tree";
  std::string backend;  // "" = pick the GPU backend of this machine
  std::string mode;
};

class Session {
 public:
  Session(SessionId id, SessionConfig config) : id_(id), config_(std::move(config)) {}

  SessionId id() const { return id_; }
  const SessionConfig& config() const { return config_; }
  /// Output file for `format` ("hatchet" -> name + ".hatchet" unless the name has it).
  std::string output_path(std::string_view format) const;

  /// Guards tree(), dropped and unattributed. Taken by the record thread per delivery and by
  /// user threads adding scope metrics; never held across a backend call.
  std::mutex mu;
  CallTree& tree() { return tree_; }
  uint64_t dropped_records = 0;
  uint64_t unattributed_kernels = 0;

 private:
  SessionId id_;
  SessionConfig config_;
  CallTree tree_;
};

}  // namespace proton
