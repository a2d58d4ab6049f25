// _proton_bench: the benchmark's instruments, built only for bench/ (PROTON_BUILD_BENCH), never
// shipped with the product. Floors measure what CUPTI itself costs so that Proton's overhead
// can be stated above it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

#include "pc_floor.h"

namespace nb = nanobind;
using namespace proton::bench;

NB_MODULE(_proton_bench, m) {
  m.doc() = "Proton's benchmark instruments (CUPTI floors); not part of the product";
  m.def(
      "pc_floor_start",
      [](uint32_t period_log2, uint64_t buffer_bytes, uint32_t sleep_ms, uint32_t drain_ms) {
        PcFloorConfig c;
        c.period_log2 = period_log2;
        c.buffer_bytes = buffer_bytes;
        c.sleep_span_ms = sleep_ms;
        c.drain_ms = drain_ms;
        std::string why;
        if (!pc_floor_start(c, why)) throw std::runtime_error(why);
      },
      nb::arg("period_log2") = 16, nb::arg("buffer_bytes") = uint64_t{4} << 20,
      nb::arg("sleep_ms") = 20, nb::arg("drain_ms") = 20);
  m.def("pc_floor_stop", [] {
    PcFloorCounts c = pc_floor_stop();
    nb::dict d;
    d["drains"] = c.drains;
    d["get_data_calls"] = c.get_data_calls;
    d["samples"] = c.samples;
    d["pc_records"] = c.pc_records;
    d["buffer_full"] = c.buffer_full;
    d["dropped"] = c.dropped;
    d["stall_reasons"] = c.stall_reasons;
    return d;
  });
}
