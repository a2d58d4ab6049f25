// The floor's Python entry points (counters_floor.h), registered into _proton_bench.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "counters_floor.h"

#ifdef PROTON_HAVE_CUPTI
namespace proton::bench {

void register_counters_floor(nanobind::module_& m) {
  namespace nb = nanobind;
  m.def(
      "_counters_floor_start",
      [](const std::vector<std::string>& metrics, size_t batch) {
        std::string why;
        if (!counters_floor_start(metrics, batch, why)) throw std::runtime_error(why);
      },
      nb::arg("metrics"), nb::arg("batch") = 512);
  m.def("_counters_floor_stop", [] {
    CountersFloorStats s = counters_floor_stop();
    nb::dict d;
    d["ranges"] = s.ranges;
    d["batches"] = s.batches;
    d["decode_ns"] = s.decode_ns;
    d["errors"] = s.errors;
    d["evaluated"] = s.evaluated;
    d["first_value"] = s.first_value;
    return d;
  });
}

}  // namespace proton::bench
#endif  // PROTON_HAVE_CUPTI
