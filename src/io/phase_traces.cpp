#include "io/phase_traces.h"

#include <string>
#include <utility>

namespace proton {

void PhaseTraces::close(uint32_t phase, std::string path, std::unique_ptr<ChromeTraceWriter> writer,
                        std::unique_ptr<TraceStore> store) {
  writer->set_path(std::move(path));
  phases_[phase] = Phase{std::move(writer), std::move(store)};
}

TraceStore* PhaseTraces::store(uint32_t phase) {
  auto it = phases_.find(phase);
  return it == phases_.end() ? nullptr : it->second.store.get();
}

void PhaseTraces::finish(uint32_t phase, uint64_t now_ns) {
  auto node = phases_.extract(phase);
  if (node.empty()) return;
  finish_trace_file(*node.mapped().store, *node.mapped().writer, now_ns);
}

std::vector<uint32_t> PhaseTraces::held() const {
  std::vector<uint32_t> out;
  for (const auto& [phase, trace] : phases_)
    out.push_back(phase);
  return out;
}

void PhaseTraces::finish_all(uint64_t now_ns) {
  while (!phases_.empty())
    finish(phases_.begin()->first, now_ns);
}

void finish_trace_file(TraceStore& store, ChromeTraceWriter& writer, uint64_t now_ns,
                       TraceSummary summary) {
  store.close_open_scopes(now_ns);
  store.for_each_chunk([&writer](auto events) { writer.append(events); });
  summary.recorded_events = store.recorded();
  summary.dropped_events = store.dropped();
  summary.dropped_before_ns = store.dropped_before_ns();
  summary.budget_bytes = store.budget_bytes();
  summary.unfinished_scopes = store.unfinished_scopes();
  writer.finish(summary);
}

}  // namespace proton
