// libFuzzer target for the msgpack encoding of profiles (.hatchet_msgpack): any bytes through
// the generic skip of MsgpackCursor, then, for input that starts with a msgpack container,
// through both profile readers (which must agree, as on JSON), the rest of the viewer and the
// JSON writer (what was read must be written and read back). Allowed outcomes: a result or
// InputError; sanitizers catch the rest.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "format/msgpack_cursor.h"
#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/fuzz/round_trip.h"
#include "viewer/hatchet_reader.h"
#include "viewer/rank_file.h"
#include "viewer/text_render.h"
#include "viewer/tree_filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton::viewer;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    proton::format::MsgpackCursor c(bytes);
    c.skip_value();
    c.expect_end();
  } catch (const InputError&) {
  }
  if (!proton::format::looks_like_msgpack(bytes)) return 0;
  Profile profile;
  bool full_ok = true, compact_ok = true;
  try {
    profile = parse_hatchet(bytes);
  } catch (const InputError&) {
    full_ok = false;
  }
  RankFile file;
  try {
    parse_rank_file(bytes, file);
  } catch (const InputError&) {
    compact_ok = false;
  }
  if (full_ok != compact_ok) __builtin_trap();  // the two readers accept the same files
  if (!full_ok) return 0;
  if (file.nodes.size() != profile.nodes.size()) __builtin_trap();
  Profile shown = hide_metadata(profile);
  std::vector<std::string> warnings;
  std::vector<Column> columns;
  for (const char* metric : {"time/ms", "count/%", "avg_time/us"}) {
    try {
      auto col = derive_columns(shown, {metric}, warnings);
      columns.push_back(std::move(col[0]));
    } catch (const UsageError&) {
    }
  }
  std::ostringstream out;
  render_tree(out, shown, columns, RenderOptions{});
  // Whatever we read, we must be able to write and read back.
  check_round_trip(profile);
  return 0;
}
