// One profiling session: its configuration, its call tree, its output path.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>

#include "backend/kernel_record.h"
#include "backend/launch_stage.h"
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

  /// Adds one completed kernel to this session's data (takes mu).
  void add_kernel(const LaunchTag& tag, const KernelRecord& r);
  /// Adds flexible metrics to the node of context `ctx` (takes mu). Throws MetricTypeError.
  void add_metrics(ContextId ctx, std::span<const std::pair<NameId, MetricValue>> metrics);

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
