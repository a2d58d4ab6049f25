// _proton_bench: the benchmark's instruments, built only for bench/ (PROTON_BUILD_BENCH), never
// shipped with the product. Floors measure what CUPTI itself costs so that Proton's overhead
// can be stated above it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <stdexcept>
#include <string>

#include "callback_probe.h"
#include "counters_floor.h"
#include "cpu_sampler.h"
#include "cupti_floor.h"
#include "dict_of.h"
#include "pc_floor.h"
#include "thread_counters.h"

namespace nb = nanobind;
using namespace proton::bench;
using proton::BackendOptions;
using proton::FloorConfig;
using proton::FloorCounts;
using proton::LaunchSet;

namespace {

uint64_t g_fixed_scratch = 0;  // what fixed_scratch hands out

LaunchSet launch_set(std::string_view what, std::string_view arg) {
  if (what == "none") return LaunchSet::kNone;
  if (what == "all") return LaunchSet::kAll;
  if (what == "runtime") return LaunchSet::kRuntime;
  if (what == "driver") return LaunchSet::kDriver;
  if (what == "profiler") return LaunchSet::kProfiler;
  throw nb::value_error((std::string(arg) +
                         " must be 'none', 'all', 'runtime', 'driver' or 'profiler', not '" +
                         std::string(what) + "'")
                            .c_str());
}

}  // namespace

NB_MODULE(_proton_bench, m) {
  m.doc() = "Proton's benchmark instruments (CUPTI floors); not part of the product";
  m.def(
      "pc_floor_start",
      [](uint32_t period_log2, uint64_t buffer_bytes, uint32_t sleep_ms, uint32_t drain_ms,
         uint64_t scratch_bytes, bool log, bool keep_enabled) {
        PcFloorConfig c;
        c.period_log2 = period_log2;
        c.buffer_bytes = buffer_bytes;
        c.sleep_span_ms = sleep_ms;
        c.drain_ms = drain_ms;
        c.scratch_bytes = scratch_bytes;
        c.log = log;
        c.keep_enabled = keep_enabled;
        std::string why;
        if (!pc_floor_start(c, why)) throw std::runtime_error(why);
      },
      nb::arg("period_log2") = 16, nb::arg("buffer_bytes") = uint64_t{4} << 20,
      nb::arg("sleep_ms") = 20, nb::arg("drain_ms") = 20,
      nb::arg("scratch_bytes") = uint64_t{8} << 20, nb::arg("log") = false,
      nb::arg("keep_enabled") = false);
  m.def("pc_floor_set_period", &pc_floor_set_period, nb::arg("period_log2"));
  // The kernel-tracing floor and its variants (cupti_floor.h), moved out of the product: the
  // names are those _proton had, so bench scripts only change the module they import.
  m.def(
      "_floor_start",
      [](std::string_view callbacks, std::string_view api_records, bool external, bool count,
         bool graph_level, uint32_t flush_ms, bool kernels) {
        FloorConfig config{launch_set(callbacks, "callbacks"),
                           launch_set(api_records, "api_records"),
                           external,
                           count,
                           flush_ms,
                           kernels};
        BackendOptions options;
        options.graph_level = graph_level;
        std::string why;
        if (!proton::cupti_floor_start(why, options, config)) throw std::runtime_error(why);
      },
      nb::arg("callbacks") = "none", nb::arg("api_records") = "none", nb::arg("external") = false,
      nb::arg("count") = false, nb::arg("graph_level") = false, nb::arg("flush_ms") = 0,
      nb::arg("kernels") = true);
  m.def("_floor_stop", &proton::cupti_floor_stop);
  m.def("_floor_counts", [] {
    FloorCounts c = proton::cupti_floor_counts();
    nb::dict d = dict_of(
        c, "records", &FloorCounts::records, "kernels", &FloorCounts::kernels, "api_records",
        &FloorCounts::api_records, "external_records", &FloorCounts::external_records,
        "runtime_callbacks", &FloorCounts::runtime_callbacks, "driver_callbacks",
        &FloorCounts::driver_callbacks, "kernels_runtime_id", &FloorCounts::kernels_runtime_id,
        "kernels_driver_id", &FloorCounts::kernels_driver_id);
    return d;
  });
  m.def("_floor_records", &proton::cupti_floor_records);

  // The callback probe (callback_probe.h): a stand-in for the product's subscriber callback,
  // whose address comes from _proton._subscriber_callback_address(); the returned address goes
  // to _proton._set_subscriber_callback before proton.start.
  m.def("callback_probe", [](const std::string& mode, uintptr_t target) {
    return reinterpret_cast<uintptr_t>(
        choose_callback(mode, reinterpret_cast<CUpti_CallbackFunc>(target)));
  });
  m.def("callback_timing", [] {
    CallbackTiming t = callback_timing();
    nb::dict d =
        dict_of(t, "mode", &CallbackTiming::mode, "enter_calls", &CallbackTiming::enter_calls,
                "exit_calls", &CallbackTiming::exit_calls, "enter_ns", &CallbackTiming::enter_ns,
                "exit_ns", &CallbackTiming::exit_ns, "probe_ns", &CallbackTiming::probe_ns);
    return d;
  });

  m.def("pc_floor_stop", [] {
    PcFloorCounts c = pc_floor_stop();
    nb::dict d = dict_of(
        c, "drains", &PcFloorCounts::drains, "get_data_calls", &PcFloorCounts::get_data_calls,
        "samples", &PcFloorCounts::samples, "pc_records", &PcFloorCounts::pc_records, "buffer_full",
        &PcFloorCounts::buffer_full, "oom_returns", &PcFloorCounts::oom_returns, "other_errors",
        &PcFloorCounts::other_errors, "dropped", &PcFloorCounts::dropped, "samples_at_disable",
        &PcFloorCounts::samples_at_disable, "stall_reasons", &PcFloorCounts::stall_reasons,
        "enable_ms", &PcFloorCounts::enable_ms, "disable_ms", &PcFloorCounts::disable_ms);
    nb::list events;
    for (const PcFloorEvent& e : c.events) {
      events.append(nb::make_tuple(e.t_ms, e.result, e.buffer_full, e.samples, e.pcs, e.remaining));
    }
    d["events"] = events;
    return d;
  });
  proton::bench::register_counters_floor(m);  // bench/counters.py's floor
  // A profile allocator with no work in it, called as Triton calls ours (size, alignment,
  // stream) through nanobind: instrumentation_bench.py's floor for the allocator's share.
  m.def(
      "set_fixed_scratch", [](uint64_t ptr) { g_fixed_scratch = ptr; }, nb::arg("ptr"));
  m.def(
      "fixed_scratch", [](uint64_t, uint64_t, uint64_t) { return g_fixed_scratch; },
      nb::arg("size"), nb::arg("alignment"), nb::arg("stream"));
  // The calling thread's user-mode instructions and cycles since its first call, from counters
  // opened on first use (thread_counters.h): bench/interleave.py. RuntimeError where refused.
  m.def("thread_counters", [] {
    thread_local proton::ThreadCounters counters;
    thread_local std::string refused;
    if (!counters.is_open() && refused.empty() && !counters.open(refused)) {
      if (refused.empty()) refused = "hardware counters unavailable";
    }
    proton::ThreadCounters::Values v;
    if (!counters.read(v)) {
      throw std::runtime_error(refused.empty() ? "reading the hardware counters failed" : refused);
    }
    return nb::make_tuple(v.instructions, v.cycles);
  });
  // The launching thread's program counter, sampled (cpu_sampler.h): bench/probes/launch_cpu.py.
  m.def("cpu_sampler_start", &cpu_sampler_start, nb::arg("period_us") = 100,
        nb::arg("capacity") = size_t{1} << 18);
  m.def("cpu_sampler_label", &cpu_sampler_label, nb::arg("label"));
  m.def("cpu_sampler_stop", &cpu_sampler_stop);
  m.def("cpu_sampler_report", [] {
    uint64_t dropped = 0;
    nb::list rows;
    for (const SampleBucket& b : cpu_sampler_report(dropped))
      rows.append(nb::make_tuple(b.label, b.library, b.symbol, b.caller, b.count));
    nb::dict d;
    d["rows"] = rows;
    d["dropped"] = dropped;
    return d;
  });
}
