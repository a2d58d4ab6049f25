// `proton._proton.max_flops`, `max_bps` and `arch_peaks`: the viewer's peak table for
// python/proton/specs.py. Translation only; the table and the formulas are the viewer's.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "viewer/peak_table.h"

namespace nb = nanobind;

namespace proton {

void register_specs(nb::module_& m) {
  // std::invalid_argument (an unknown device type or architecture) arrives as ValueError.
  m.def("max_flops", &viewer::max_flops, nb::arg("device_type"), nb::arg("arch"), nb::arg("width"),
        nb::arg("num_sms"), nb::arg("clock_rate"));
  m.def("max_bps", &viewer::max_bps, nb::arg("device_type"), nb::arg("arch"), nb::arg("bus_width"),
        nb::arg("memory_clock_rate"));
  // (device type, arch, fixed 8-bit FLOP/s or 0, 8-bit FLOP per SM per clock, bytes/s) per row.
  m.def("arch_peaks", [] {
    std::vector<std::tuple<std::string, std::string, double, double, double>> rows;
    for (const viewer::ArchPeak& p : viewer::arch_peaks()) {
      rows.emplace_back(std::string(p.type), std::string(p.arch), p.fixed_flops8,
                        p.flops8_per_unit_clock, p.bytes_per_s);
    }
    return rows;
  });
}

}  // namespace proton
