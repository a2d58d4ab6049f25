// periodic_flushing:format=chrome_trace: one Chrome trace per phase, as triton.profiler writes
// them (name.part_<N>.chrome_trace). A phase's events stream into its own TraceStore and
// ChromeTraceWriter; when the session advances, the current phase's pair moves here, keeps
// taking its late kernels, and is finished (written) once the phase completes or at finalize.
//
// Not thread-safe: the owning Session serialises access (Session::mu).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/trace_store.h"
#include "io/chrome_trace_writer.h"

namespace proton {

class PhaseTraces {
 public:
  /// Takes the trace of `phase`, which the session just closed; it is written to `path`.
  void close(uint32_t phase, std::string path, std::unique_ptr<ChromeTraceWriter> writer,
             std::unique_ptr<TraceStore> store);
  /// The store of a closed phase not yet written, or nullptr.
  TraceStore* store(uint32_t phase);
  /// Writes phase's file (its scopes still open are closed at `now_ns`) and frees it; no-op
  /// for a phase not held. Throws std::runtime_error when the file cannot be written.
  void finish(uint32_t phase, uint64_t now_ns);
  /// The phases held (closed, not yet written), oldest first.
  std::vector<uint32_t> held() const;
  /// finish() for every phase still held, oldest first.
  void finish_all(uint64_t now_ns);

 private:
  struct Phase {
    std::unique_ptr<ChromeTraceWriter> writer;
    std::unique_ptr<TraceStore> store;
  };
  std::map<uint32_t, Phase> phases_;
};

/// Appends what `store` holds to `writer` (scopes still open closed at `now_ns`) and finishes
/// the file with the store's counts in `summary`.
void finish_trace_file(TraceStore& store, ChromeTraceWriter& writer, uint64_t now_ns,
                       TraceSummary summary = {});

}  // namespace proton
