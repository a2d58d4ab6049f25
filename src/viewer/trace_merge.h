// `proton-viewer merge --output-format trace`: per-rank Chrome traces into one Perfetto file,
// one process track per rank.
//
// Clock basis: every rank's trace gives its ts relative to its own start, and records that start
// as host wall-clock ns ("baseTimeNanoseconds"); its kernels were already moved onto the host's
// steady clock by the GPU timestamp offset measured at trace start ("proton_gpu_offset_ns" in
// otherData). The merge shifts each rank by (its base - the earliest base), so events line up on
// the hosts' wall clocks; across hosts the alignment is as good as their clock sync (NTP/PTP).
// The offsets used are written into the merged file's otherData ("proton_rank_shift_ns").
//
// Each input is read whole, checked (a pass that validates its JSON), then its events are
// rewritten one at a time into the output: memory is one input, not all of them.
#pragma once

#include <string>
#include <vector>

namespace proton::viewer {

struct TraceMergeResult {
  size_t merged = 0;
  std::vector<std::string> left_out;  // "file: reason" for inputs not merged
  std::vector<std::string> notes;     // per rank: "rank 1 (file): shift +1234 ns, gpu offset ..."
};

// Writes `output` (atomically: a partial file renamed at the end). Throws FileError when no
// input can be merged or the output cannot be written.
TraceMergeResult merge_traces(const std::vector<std::string>& inputs, const std::string& output);

// The rewriting of one trace's text, exposed for tests and the fuzzer: appends the events of
// `text` to `out` as rank `rank` (pid rank + 1), shifted by `shift_ns`. Throws InputError on
// text that is not a Chrome trace object.
struct TraceHeader {
  long long base_ns = -1;  // baseTimeNanoseconds; -1 when absent
  long long rank = -1;     // otherData.proton_rank
  long long gpu_offset_ns = 0;
  std::string host;
  std::string device;
};
TraceHeader read_trace_header(const std::string& text);
void rewrite_trace_events(const std::string& text, long long rank, long long shift_ns,
                          const std::string& label, std::string& out, bool& first_event);

}  // namespace proton::viewer
