// libFuzzer target: any bytes through the reader, and whatever it accepts through the rest of
// the viewer (metadata hiding, derived metrics, rendering, the writer). The only allowed
// outcomes are a profile or an InputError/UsageError; sanitizers catch everything else.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/fuzz/round_trip.h"
#include "viewer/hatchet_reader.h"
#include "viewer/text_render.h"
#include "viewer/tree_filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace proton::viewer;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Profile profile;
  try {
    profile = parse_hatchet(text);
  } catch (const InputError&) {
    return 0;
  }
  Profile shown = hide_metadata(profile);
  std::vector<std::string> warnings;
  std::vector<Column> columns;
  for (const char* metric : {"time/ms", "util", "count/%", "avg_time/us", "tflop/s"}) {
    try {
      auto c = derive_columns(shown, {metric}, warnings);
      columns.push_back(std::move(c[0]));
    } catch (const UsageError&) {
    }
  }
  std::ostringstream out;
  RenderOptions options;
  options.print_sorted = true;
  render_tree(out, shown, columns, options);
  // Whatever we read, we must be able to write and read back.
  check_round_trip(profile);
  return 0;
}
