// nanobind module `proton._proton`: argument translation only; all logic lives in the core.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "bindings/counters_bindings.h"
#include "bindings/launch_hook.h"
#include "bindings/python_context.h"
#include "common/name_table.h"
#include "common/thread_counters.h"
#include "context/thread_context.h"
#include "session/runtime.h"

#ifdef PROTON_HAVE_CUPTI
#include "backends/cupti/cupti_floor.h"
#include "backends/cupti/diagnostics.h"
#endif

namespace nb = nanobind;
using namespace proton;

namespace {

NameId intern(std::string_view s) {
  return NameTable::global().intern(s);
}

// Adds fields of a struct to a dict: {{"key", &Struct::member}, ...}, all of one type.
template <typename S, typename T>
void put_fields(nb::dict& d, const S& s,
                std::initializer_list<std::pair<const char*, T S::*>> fields) {
  for (const auto& [key, member] : fields)
    d[key] = s.*member;
}

// A dict of counters from a struct.
template <typename S>
nb::dict counters_dict(const S& s,
                       std::initializer_list<std::pair<const char*, uint64_t S::*>> fields) {
  nb::dict d;
  put_fields(d, s, fields);
  return d;
}

MetricValue to_metric(std::string_view name, nb::handle v) {
  if (nb::isinstance<nb::bool_>(v) || nb::isinstance<nb::int_>(v)) {
    return nb::cast<int64_t>(v);
  }
  if (nb::isinstance<nb::float_>(v)) return nb::cast<double>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    bool all_int = true;
    for (nb::handle e : v) {
      if (nb::isinstance<nb::float_>(e)) {
        all_int = false;
      } else if (!nb::isinstance<nb::int_>(e)) {
        throw nb::type_error(
            ("metric '" + std::string(name) + "': list elements must be int or float").c_str());
      }
    }
    if (all_int) return nb::cast<std::vector<int64_t>>(v);
    return nb::cast<std::vector<double>>(v);
  }
  // Scalars from numpy/torch expose __float__/__int__ via item().
  if (nb::hasattr(v, "item")) return to_metric(name, v.attr("item")());
  throw nb::type_error(("metric '" + std::string(name) +
                        "' must be an int, a float or a list of "
                        "them, not " +
                        nb::type_name(v.type()).c_str())
                           .c_str());
}

void add_metrics(nb::dict metrics) {
  std::vector<std::pair<NameId, MetricValue>> converted;
  converted.reserve(metrics.size());
  for (auto [k, v] : metrics) {
    if (!nb::isinstance<nb::str>(k)) throw nb::type_error("metric names must be strings");
    std::string_view name = nb::cast<std::string_view>(k);
    converted.emplace_back(intern(name), to_metric(name, v));
  }
  Runtime::get().add_metrics(converted);
}

}  // namespace

NB_MODULE(_proton, m) {
  m.doc() = "Proton's C++ engine (internal; use the `proton` package)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const MetricTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    }
  });

  m.def("set_main_thread", &ThreadContext::set_main_thread);

  m.def(
      "start",
      [](std::string name, std::string context, std::string data, std::string backend,
         std::string mode) {
        return Runtime::get().start(SessionConfig{std::move(name), std::move(context),
                                                  std::move(data), std::move(backend),
                                                  std::move(mode)});
      },
      nb::arg("name"), nb::arg("context"), nb::arg("data"), nb::arg("backend"), nb::arg("mode"),
      nb::call_guard<nb::gil_scoped_release>());
  m.def("activate", [](SessionId id) { Runtime::get().activate(id); });
  m.def("activate_all", [] { Runtime::get().activate_all(); });
  m.def(
      "deactivate", [](SessionId id, bool flush) { Runtime::get().deactivate(id, flush); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "deactivate_all", [](bool flush) { Runtime::get().deactivate_all(flush); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "finalize", [](SessionId id, std::string fmt) { Runtime::get().finalize(id, fmt); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "finalize_all", [](std::string fmt) { Runtime::get().finalize_all(fmt); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "hatchet_json",
      [](SessionId id, uint32_t phase) { return Runtime::get().hatchet_json(id, phase); },
      nb::arg("session"), nb::arg("phase") = 0, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "hatchet_msgpack",
      [](SessionId id, uint32_t phase) {
        std::string data;
        {
          nb::gil_scoped_release release;
          data = Runtime::get().hatchet_msgpack(id, phase);
        }
        return nb::bytes(data.data(), data.size());
      },
      nb::arg("session"), nb::arg("phase") = 0);
  m.def(
      "advance_phase", [](SessionId id) { return Runtime::get().advance_phase(id); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "is_phase_complete",
      [](SessionId id, uint32_t phase) { return Runtime::get().is_phase_complete(id, phase); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "clear_phase",
      [](SessionId id, uint32_t phase, bool up_to) {
        Runtime::get().clear_phase(id, phase, up_to);
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("has_sessions", [] { return Runtime::get().has_sessions(); });
  m.def("is_active", [](SessionId id) { return Runtime::get().is_active(id); });
  m.def("backend_name", [] { return Runtime::get().backend_name(); });
  m.def("_processor_stats", [] {
    using S = RecordProcessor::Stats;
    return counters_dict(Runtime::get().processor().stats(), {{"records", &S::records},
                                                              {"unattributed", &S::unattributed},
                                                              {"dropped", &S::dropped},
                                                              {"pending_tags", &S::pending_tags},
                                                              {"waiting", &S::waiting}});
  });

  m.def("enter_scope", [](std::string_view name) {
    ThreadContext::current().enter_scope(intern(name));
    return ThreadContext::launch_context();
  });
  m.def(
      "exit_scope",
      [](nb::handle name) {
        if (name.is_none()) {
          ThreadContext::current().exit_scope(kNoName);
        } else {
          ThreadContext::current().exit_scope(nb::cast<std::string_view>(name));
        }
      },
      nb::arg("name").none());
  m.def("open_scopes", [] { return ThreadContext::current().open_scopes(); });
  m.def(
      "set_state",
      [](nb::handle name) {
        ThreadContext::current().set_state(
            name.is_none() ? kNoName : intern(nb::cast<std::string_view>(name)));
      },
      nb::arg("name").none());
  m.def("depth", [] { return ThreadContext::current().depth(); });
  m.def("add_metrics", &add_metrics);
  m.def("state", [] {
    NameId s = ThreadContext::current().state();
    return s == kNoName ? std::string() : std::string(NameTable::global().name(s));
  });
  // Benchmarks (bench/interleave.py): the calling thread's user-mode instructions and cycles
  // since its first call, from counters opened on first use; RuntimeError where refused.
  m.def("_thread_counters", [] {
    thread_local ThreadCounters counters;
    thread_local std::string refused;
    if (!counters.is_open() && refused.empty() && !counters.open(refused)) {
      if (refused.empty()) refused = "hardware counters unavailable";
    }
    ThreadCounters::Values v;
    if (!counters.read(v)) {
      throw std::runtime_error(refused.empty() ? "reading the hardware counters failed" : refused);
    }
    return nb::make_tuple(v.instructions, v.cycles);
  });
  python::register_python_context(m);
  python::register_launch_hook(m);
  python::register_counters(m);  // hardware counters (issue 20)

#ifdef PROTON_HAVE_CUPTI
  // The benchmark floor and its variants (cupti_floor.h): callbacks / api_records name a
  // set of the backend's launch ids, "none", "all", "runtime", "driver" or "profiler" (those
  // the backend enables by default).
  m.def(
      "_floor_start",
      [](std::string_view callbacks, std::string_view api_records, bool external, bool count,
         bool graph_level, uint32_t flush_ms) {
        auto launch_set = [](std::string_view what, std::string_view arg) {
          if (what == "none") return LaunchSet::kNone;
          if (what == "all") return LaunchSet::kAll;
          if (what == "runtime") return LaunchSet::kRuntime;
          if (what == "driver") return LaunchSet::kDriver;
          if (what == "profiler") return LaunchSet::kProfiler;
          throw nb::value_error((std::string(arg) +
                                 " must be 'none', 'all', 'runtime', 'driver' or 'profiler', "
                                 "not '" +
                                 std::string(what) + "'")
                                    .c_str());
        };
        FloorConfig config{launch_set(callbacks, "callbacks"),
                           launch_set(api_records, "api_records"), external, count, flush_ms};
        BackendOptions options;
        options.graph_level = graph_level;
        std::string why;
        if (!cupti_floor_start(why, options, config)) throw std::runtime_error(why);
      },
      nb::arg("callbacks") = "none", nb::arg("api_records") = "none", nb::arg("external") = false,
      nb::arg("count") = false, nb::arg("graph_level") = false, nb::arg("flush_ms") = 0);
  m.def("_floor_stop", &cupti_floor_stop);
  m.def("_floor_counts", [] {
    using C = FloorCounts;
    return counters_dict(cupti_floor_counts(), {{"records", &C::records},
                                                {"kernels", &C::kernels},
                                                {"api_records", &C::api_records},
                                                {"external_records", &C::external_records},
                                                {"runtime_callbacks", &C::runtime_callbacks},
                                                {"driver_callbacks", &C::driver_callbacks},
                                                {"kernels_runtime_id", &C::kernels_runtime_id},
                                                {"kernels_driver_id", &C::kernels_driver_id}});
  });
  m.def("_floor_records", &cupti_floor_records);
  m.def("_buffer_stats", [] {  // the CUPTI activity buffer pool (memory diagnostics)
    using D = cupti::Diagnostics;
    return counters_dict(cupti::diagnostics(),
                         {{"buffer_bytes", &D::buffer_bytes},
                          {"allocated", &D::buffers_allocated},
                          {"free", &D::buffers_free},
                          {"declined", &D::buffers_declined},
                          {"periodic_flushes", &D::periodic_flushes},
                          {"graph_level_fallbacks", &D::graph_level_fallbacks}});
  });
  m.def("_callback_timing", [] {  // PROTON_DIAG_CALLBACK's probe (callback_probe.h)
    using Timing = cupti::CallbackTiming;
    Timing t = cupti::callback_timing();
    nb::dict d = counters_dict(
        t, {{"enter_calls", &Timing::enter_calls}, {"exit_calls", &Timing::exit_calls}});
    d["mode"] = t.mode;
    put_fields<Timing, double>(d, t,
                               {{"enter_ns", &Timing::enter_ns},
                                {"exit_ns", &Timing::exit_ns},
                                {"probe_ns", &Timing::probe_ns}});
    return d;
  });
#endif
  m.def("set_library_search_paths", &set_library_search_paths);
}
