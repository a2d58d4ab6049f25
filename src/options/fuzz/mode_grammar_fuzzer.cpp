// libFuzzer target: the mode grammar (options/mode.h), counters modes above all, and the
// counter rules on whatever the parser accepts. Counter-data images themselves are decoded by
// CUPTI, not by us; the mode string is the outside input we parse. Any input must give a config or
// an std::invalid_argument, and a parsed config must round-trip through canonical().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "data/counter_rules.h"
#include "options/mode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    proton::Mode mode = proton::parse_mode(text);
    const auto* parsed = std::get_if<proton::CounterConfig>(&mode);
    if (parsed == nullptr) return 0;
    const proton::CounterConfig& c = *parsed;
    proton::Mode again = proton::parse_mode(c.canonical());
    if (std::get<proton::CounterConfig>(again).canonical() != c.canonical()) std::abort();
    if (!c.range_profiler && !c.pm_sampling) std::abort();
    for (const auto& alternatives : c.metrics) {
      for (const auto& name : alternatives)
        (void)proton::counter_rule(name);
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
