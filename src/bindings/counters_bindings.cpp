#include "bindings/counters_bindings.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>
#include <vector>

#ifdef PROTON_HAVE_CUPTI
#include "backends/cupti/counters_info.h"
#endif

namespace nb = nanobind;

namespace proton::python {

void register_counters(nb::module_& m) {
  // (chip, [base metric names]) of device 0; raises RuntimeError with the reason otherwise.
  m.def(
      "_counters_list_metrics",
      [](bool pm) {
#ifdef PROTON_HAVE_CUPTI
        std::string chip, why;
        std::vector<std::string> names;
        if (!cupti::list_counter_metrics(pm, chip, names, why)) throw std::runtime_error(why);
        return nb::make_tuple(chip, names);
#else
        (void)pm;
        throw std::runtime_error("this build of proton has no CUPTI backend");
        return nb::make_tuple();
#endif
      },
      nb::arg("pm") = false);
  m.def("_counters_stats", [] {
    nb::dict d;
#ifdef PROTON_HAVE_CUPTI
    cupti::CounterRunStats s = cupti::counter_run_stats();
    d["ranges"] = s.ranges;
    d["batches"] = s.batches;
    d["decode_ns"] = s.decode_ns;
    d["evaluated"] = s.evaluated;
    d["dropped_ranges"] = s.dropped_ranges;
    d["errors"] = s.errors;
    cupti::PmRunStats pm = cupti::pm_run_stats();
    d["pm_samples"] = pm.samples;
    d["pm_decodes"] = pm.decodes;
    d["pm_overflows"] = pm.overflows;
    d["pm_errors"] = pm.errors;
    d["pm_decode_ns"] = pm.decode_ns;
    d["pm_evaluate_ns"] = pm.evaluate_ns;
    d["pm_hardware_buffer"] = pm.hardware_buffer;
    d["pm_image_bytes"] = pm.image_bytes;
    d["pm_interval_ns"] = pm.interval_ns;
#endif
    return d;
  });
}

}  // namespace proton::python
