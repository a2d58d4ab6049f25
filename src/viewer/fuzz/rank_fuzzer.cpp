// libFuzzer target for the multi-rank decoders: any bytes through the compact rank-file reader
// (which must agree with the Profile reader on what it accepts), folded twice into a RankMerger
// (the second time as a duplicate rank) and written; and the same bytes as a Chrome trace
// through the trace merge's header reader and event rewriter. Allowed outcomes: a result, or
// InputError; sanitizers catch the rest.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "viewer/errors.h"
#include "viewer/hatchet_reader.h"
#include "viewer/rank_file.h"
#include "viewer/rank_merge.h"
#include "viewer/trace_merge.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton::viewer;
  std::string text(reinterpret_cast<const char*>(data), size);
  bool compact_ok = true, full_ok = true;
  RankFile file;
  try {
    parse_rank_file(text, file);
  } catch (const InputError&) {
    compact_ok = false;
  }
  Profile profile;
  try {
    profile = parse_hatchet(text);
  } catch (const InputError&) {
    full_ok = false;
  }
  if (compact_ok != full_ok) __builtin_trap();  // the two readers accept the same files
  if (compact_ok) {
    if (file.nodes.size() != profile.nodes.size()) __builtin_trap();
    // The same metrics, of the same kinds (declared ones included).
    if (file.metrics.size() != profile.metrics.size()) __builtin_trap();
    for (size_t m = 0; m < file.metrics.size(); ++m) {
      if (file.metrics[m].name != profile.metrics[m].name ||
          file.metrics[m].kind != profile.metrics[m].kind)
        __builtin_trap();
    }
    RankMerger merger;
    merger.track_presence();
    std::string why;
    merger.add_file(file, "a", why);
    merger.add(profile, "b", why);
    if (merger.size() > 0) {
      Profile merged = merger.result();
      (void)merger.set_warnings();
      std::string path = "/tmp/proton_rank_fuzz_" + std::to_string(size) + ".hatchet";
      try {
        merger.write_json(path);
        Profile back = load_hatchet(path);
        if (back.nodes.size() != merged.nodes.size()) __builtin_trap();
      } catch (const FileError&) {
      }
      std::remove(path.c_str());
    }
  }
  try {
    TraceHeader h = read_trace_header(text);
    std::string out;
    bool first = true;
    rewrite_trace_events(text, h.rank < 0 ? 0 : h.rank % 4096, 1000, " · x", out, first);
  } catch (const InputError&) {
  }
  return 0;
}
