// The floor's Python entry points (counters_floor.h), registered into _proton_bench.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "counters_floor.h"
#include "dict_of.h"
#include "pm_floor.h"

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
    nb::dict d =
        dict_of(s, "ranges", &CountersFloorStats::ranges, "batches", &CountersFloorStats::batches,
                "decode_ns", &CountersFloorStats::decode_ns, "errors", &CountersFloorStats::errors,
                "evaluated", &CountersFloorStats::evaluated, "first_value",
                &CountersFloorStats::first_value);
    return d;
  });
  // The PM-sampling floor (pm_floor.h): the floor of the default counters mode with
  // _floor_start() (kernel activity) beside it.
  m.def(
      "_pm_floor_start",
      [](const std::vector<std::string>& metrics, uint32_t interval_us, uint64_t hardware_buffer,
         uint32_t image_samples, uint32_t decode_ms, bool evaluate, size_t keep_samples) {
        PmFloorConfig c;
        c.metrics = metrics;
        c.interval_us = interval_us;
        c.hardware_buffer = hardware_buffer;
        c.image_samples = image_samples;
        c.decode_ms = decode_ms;
        c.evaluate = evaluate;
        c.keep_samples = keep_samples;
        std::string why;
        if (!pm_floor_start(c, why)) throw std::runtime_error(why);
      },
      nb::arg("metrics") = std::vector<std::string>{}, nb::arg("interval_us") = 250,
      nb::arg("hardware_buffer") = uint64_t{0}, nb::arg("image_samples") = 0,
      nb::arg("decode_ms") = 20, nb::arg("evaluate") = true, nb::arg("keep_samples") = 0);
  m.def("_pm_floor_stop", [] {
    PmFloorStats s = pm_floor_stop();
    nb::dict d =
        dict_of(s, "metrics", &PmFloorStats::metrics, "samples", &PmFloorStats::samples, "decodes",
                &PmFloorStats::decodes, "overflows", &PmFloorStats::overflows, "errors",
                &PmFloorStats::errors, "decode_ns", &PmFloorStats::decode_ns, "evaluate_ns",
                &PmFloorStats::evaluate_ns, "image_bytes", &PmFloorStats::image_bytes, "passes",
                &PmFloorStats::passes, "totals", &PmFloorStats::totals, "rss_kb",
                &PmFloorStats::rss_kb, "kept", &PmFloorStats::kept);
    return d;
  });
}

}  // namespace proton::bench
#endif  // PROTON_HAVE_CUPTI
