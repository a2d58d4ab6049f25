// libFuzzer target: the counters mode grammar (data/counter_config.h) and the counter-track
// writer on whatever the parser accepts. Counter-data images themselves are decoded by CUPTI,
// not by us; the mode string is the outside input we parse. Any input must give a config or an
// std::invalid_argument, and a parsed config must round-trip through canonical().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "data/counter_config.h"
#include "data/counter_rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    proton::CounterConfig c = proton::parse_counter_config(text);
    if (!c.enabled) return 0;
    proton::CounterConfig again = proton::parse_counter_config(c.canonical());
    if (again.canonical() != c.canonical()) std::abort();
    if (!c.range_profiler && !c.pm_sampling) std::abort();
    for (const auto& alternatives : c.metrics) {
      for (const auto& name : alternatives)
        (void)proton::counter_rule(name);
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
