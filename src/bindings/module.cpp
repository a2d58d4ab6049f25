// nanobind module `proton._proton`: argument translation only; all logic lives in the core.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attribution/host_call.h"
#include "attribution/launch_stage.h"
#include "bindings/counters_bindings.h"
#include "bindings/launch_hook.h"
#include "bindings/options_bindings.h"
#include "bindings/python_context.h"
#include "common/name_table.h"
#include "context/context_tree.h"
#include "context/thread_context.h"
#include "io/run_info.h"
#include "session/runtime.h"

#ifdef PROTON_HAVE_CUPTI
#include "backends/cupti/diagnostics.h"
#include "backends/cupti/pc_sampling_stats.h"
#endif

namespace nb = nanobind;
using namespace proton;

namespace proton {
void bind_instrumentation(nb::module_& m);  // instrumentation_bindings.cpp
}

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

// python/proton/metric.py's convert(name, value), set on import; None before that.
nb::object& metric_converter() {
  static nb::object* fn = new nb::object(nb::none());  // leaked: no Python calls at exit
  return *fn;
}

// A name as messages show it: on one line, ASCII control characters as \xNN.
std::string printable(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// Where a metric lands, for messages: the context's innermost name ("ROOT" at the top).
std::string site_name(ContextId ctx) {
  NameId n = ctx == kRootContext ? kNoName : ContextTree::global().node(ctx).name;
  return n == kNoName ? std::string("ROOT") : printable(NameTable::global().name(n));
}

constexpr const char* kAccepted =
    "accepted: an int in [-2**63, 2**63-1], a float, a str, a list of ints or floats, or a "
    "one-element tensor";

[[noreturn]] void metric_error(PyObject* type, std::string_view name, ContextId ctx,
                               const std::string& what) {
  std::string msg = "metric '" + printable(name) + "' in scope '" + site_name(ctx) + "': " + what +
                    " (" + kAccepted + ")";
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

// A NaN or an infinity is recorded as it is (the writers keep it readable); it usually means a
// bug upstream (a diverging loss, a 0/0 rate), so the user hears of it once per metric and scope.
// Called with the GIL held, which guards `warned`.
void warn_nonfinite(std::string_view name, ContextId ctx, double v) {
  static auto* warned = new std::set<std::pair<NameId, ContextId>>();  // leaked: no exit order
  if (!warned->emplace(intern(name), ctx).second) return;
  std::string msg = "proton: metric '" + printable(name) + "' in scope '" + site_name(ctx) +
                    "' is " + (std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf")) +
                    "; it is recorded as such, and every inclusive sum that contains it is " +
                    (std::isnan(v) ? "nan" : "infinite or nan") +
                    " too (warned once per metric and scope)";
  if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) != 0) throw nb::python_error();
}

// `element`: the index in a list, or -1 for a value of its own (only read for the message).
int64_t int_metric(std::string_view name, ContextId ctx, nb::handle v, int64_t element = -1) {
  auto what = [element] {
    return element < 0 ? std::string("the value") : "element " + std::to_string(element);
  };
  if (nb::isinstance<nb::bool_>(v)) {
    metric_error(PyExc_TypeError, name, ctx,
                 what() + " is a bool; pass int(x) to record it as a number");
  }
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0) {
    metric_error(PyExc_OverflowError, name, ctx,
                 what() + " is an int outside the 64-bit signed range");
  }
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<int64_t>(x);
}

double float_metric(std::string_view name, ContextId ctx, nb::handle v) {
  double d = PyFloat_AsDouble(v.ptr());
  if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
  if (!std::isfinite(d)) warn_nonfinite(name, ctx, d);
  return d;
}

MetricValue to_metric(std::string_view name, nb::handle v, ContextId ctx) {
  if (nb::isinstance<nb::int_>(v)) return int_metric(name, ctx, v);
  if (nb::isinstance<nb::float_>(v)) return float_metric(name, ctx, v);
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    // One pass, in order: each element checked once; ints stay ints until a float turns the
    // list into floats (ints then convert, as in triton.profiler).
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool all_int = true;
    int64_t i = 0;
    for (nb::handle e : v) {
      if (nb::isinstance<nb::float_>(e)) {
        if (all_int) floats.assign(ints.begin(), ints.end());
        all_int = false;
        floats.push_back(float_metric(name, ctx, e));
      } else if (nb::isinstance<nb::int_>(e)) {
        int64_t x = int_metric(name, ctx, e, i);  // bool and range checks
        if (all_int) {
          ints.push_back(x);
        } else {
          floats.push_back(static_cast<double>(x));
        }
      } else {
        metric_error(PyExc_TypeError, name, ctx,
                     "element " + std::to_string(i) + " is a " + nb::type_name(e.type()).c_str() +
                         ", not an int or float");
      }
      ++i;
    }
    if (all_int) return ints;
    return floats;
  }
  // Anything else (torch tensors, numpy scalars) goes through python/proton/metric.py: CPU
  // values become numbers, device tensors are summed on the device and stand here as a 0 of
  // their type (so the node exists and a type change is caught now, not at finalize).
  if (!metric_converter().is_none()) {
    std::string scope = site_name(ctx);
    nb::object converted = metric_converter()(nb::str(name.data(), name.size()), v,
                                              nb::str(scope.data(), scope.size()));
    if (nb::isinstance<nb::bool_>(converted) || nb::isinstance<nb::int_>(converted) ||
        nb::isinstance<nb::float_>(converted) || nb::isinstance<nb::str>(converted)) {
      return to_metric(name, converted, ctx);
    }
  } else if (nb::hasattr(v, "item")) {
    return to_metric(name, v.attr("item")(), ctx);
  }
  metric_error(PyExc_TypeError, name, ctx,
               std::string("a ") + nb::type_name(v.type()).c_str() + " is not a metric value");
}

std::vector<std::pair<NameId, MetricValue>> convert_metrics(nb::dict metrics, ContextId ctx) {
  std::vector<std::pair<NameId, MetricValue>> converted;
  converted.reserve(metrics.size());
  for (auto [k, v] : metrics) {
    if (!nb::isinstance<nb::str>(k)) throw nb::type_error("metric names must be strings");
    std::string_view name = nb::cast<std::string_view>(k);
    converted.emplace_back(intern(name), to_metric(name, v, ctx));
  }
  return converted;
}

// The context add_metrics writes to: the innermost open scope of this thread.
ContextId current_site() {
  ThreadContext& t = ThreadContext::current();
  return t.open_scopes() == 0 ? kRootContext : t.scope_context();
}

void add_metrics(nb::dict metrics) {
  Runtime::get().add_metrics(convert_metrics(metrics, current_site()));
}

}  // namespace

namespace proton {
void register_profiles(nb::module_& m);  // profiles_bindings.cpp: proton.profiles' reader
void register_specs(nb::module_& m);     // specs_bindings.cpp: proton.specs' peak table
namespace python {
void register_control(nb::module_& m);  // control_bindings.cpp: always-on windows
}  // namespace python
}  // namespace proton

NB_MODULE(_proton, m) {
  m.doc() = "Proton's C++ engine (internal; use the `proton` package)";
  register_profiles(m);
  register_specs(m);

  // A metric that changes type: triton.profiler raises RuntimeError("Metric value type
  // mismatch ..."); ours is a RuntimeError too, and a TypeError as before, so either catches it.
  static PyObject* metric_type_error = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_RuntimeError, PyExc_TypeError);
    PyObject* cls = PyErr_NewException("proton._proton.MetricTypeError", bases, nullptr);
    Py_XDECREF(bases);
    return cls;
  }();
  if (metric_type_error == nullptr) throw nb::python_error();
  m.attr("MetricTypeError") = nb::handle(metric_type_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const MetricTypeError& e) {
      PyErr_SetString(metric_type_error, e.what());
    }
  });

  m.def("set_main_thread", &ThreadContext::set_main_thread);

  m.def(
      "start",
      [](std::string name, std::string context, std::string data, std::string backend,
         std::string mode, bool kernel_records, std::optional<bool> enable_nvtx,
         std::string cupti_lib_dir, int64_t profile_buffer_size) {
        return Runtime::get().start(
            python::session_config(std::move(name), std::move(context), std::move(data),
                                   std::move(backend), std::move(mode), kernel_records, enable_nvtx,
                                   std::move(cupti_lib_dir), profile_buffer_size));
      },
      nb::arg("name"), nb::arg("context"), nb::arg("data"), nb::arg("backend"), nb::arg("mode"),
      nb::arg("kernel_records") = true, nb::arg("enable_nvtx") = nb::none(),
      nb::arg("cupti_lib_dir") = "", nb::arg("profile_buffer_size") = 0,
      nb::call_guard<nb::gil_scoped_release>());
  m.def("activate", [](SessionId id) { Runtime::get().activate(id); });
  m.def(
      "activate_all", [](bool windows) { Runtime::get().activate_all(windows); },
      nb::arg("windows") = true);
  m.def(
      "deactivate", [](SessionId id, bool flush) { Runtime::get().deactivate(id, flush); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "deactivate_all",
      [](bool flush, bool windows) { Runtime::get().deactivate_all(flush, windows); },
      nb::arg("flush"), nb::arg("windows") = true, nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "finalize", [](SessionId id, std::string fmt) { Runtime::get().finalize(id, fmt); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "finalize_all",
      [](std::string fmt, bool windows) { Runtime::get().finalize_all(fmt, windows); },
      nb::arg("format"), nb::arg("windows") = true, nb::call_guard<nb::gil_scoped_release>());
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
  // The backend= values start takes, from the backend registry.
  m.def("backend_names", [] {
    std::vector<std::string> names;
    for (std::string_view n : backend_names())
      names.emplace_back(n);
    return names;
  });
  // An instrumentation session's mode text (Triton's compiler hooks install it); None for
  // any other session.
  m.def("instrumentation_mode",
        [](SessionId id) { return Runtime::get().instrumentation_mode(id); });
  m.def("_processor_stats", [] {
    using S = RecordProcessor::Stats;
    return counters_dict(Runtime::get().processor().stats(), {{"records", &S::records},
                                                              {"unattributed", &S::unattributed},
                                                              {"dropped", &S::dropped},
                                                              {"pending_tags", &S::pending_tags},
                                                              {"waiting", &S::waiting}});
  });

  m.def("enter_scope", [](std::string_view name) {
    ThreadContext& t = ThreadContext::current();
    t.enter_user_scope(intern(name));
    // context="python" sessions place a scope at the Python path of its entry, state included
    // (as triton.profiler does; the scope's name is no frame of theirs): its metrics go there,
    // wherever they are added from.
    if ((LaunchStage::active_sessions.load(std::memory_order_relaxed) &
         LaunchStage::python_sessions.load(std::memory_order_relaxed)) != 0) {
      t.set_scope_python_site(LaunchStage::python_context());
    }
    // An empty scope is still a node of the profile, as in triton.profiler: create it now in
    // every active session (one relaxed load when none is).
    Runtime::get().add_metrics({});
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
  // The innermost scope open on this thread (None when none): exit_scope(name) checks it
  // before closing anything, so a mismatch leaves every stack as it was.
  m.def("innermost_scope", []() -> nb::object {
    ThreadContext& t = ThreadContext::current();
    if (t.open_scopes() == 0) return nb::none();
    NameId name = ContextTree::global().node(t.scope_context()).name;
    return nb::str(NameTable::global().name(name).data(), NameTable::global().name(name).size());
  });
  m.def(
      "set_state",
      [](nb::handle name) {
        ThreadContext::current().set_state(
            name.is_none() ? kNoName : intern(nb::cast<std::string_view>(name)));
      },
      nb::arg("name").none());
  m.def("depth", [] { return ThreadContext::current().depth(); });
  m.def("add_metrics", &add_metrics);
  // Tensor metrics (python/proton/metric.py).
  m.def("_set_metric_converter",
        [](nb::handle fn) { metric_converter() = nb::borrow<nb::object>(fn); });
  // One int for both places a scope metric can go: the shadow context (low 32 bits) and, while
  // a context="python" session is active, the scope's Python site (high 32 bits).
  m.def("_metric_context", [] {
    uint64_t python = 0;
    if ((LaunchStage::active_sessions.load(std::memory_order_relaxed) &
         LaunchStage::python_sessions.load(std::memory_order_relaxed)) != 0) {
      python = Runtime::scope_python_site();
    }
    return (python << 32) | ThreadContext::launch_context();
  });
  m.def("_active_sessions", [] { return Runtime::get().active_session_ids(); });
  // The calling thread's synchronizes and copies are Proton's own until (false): not timed.
  m.def("_profiler_host_calls",
        [](bool begin) { begin ? ProfilerHostCalls::begin() : ProfilerHostCalls::end(); });
  m.def("_add_metrics_to", [](SessionId id, uint64_t where, nb::dict metrics) {
    auto ctx = static_cast<ContextId>(where);
    auto python = static_cast<ContextId>(where >> 32);
    return Runtime::get().add_metrics_to(id, ctx, python, convert_metrics(metrics, ctx));
  });
  m.def("state", [] {
    NameId s = ThreadContext::current().state();
    return s == kNoName ? std::string() : std::string(NameTable::global().name(s));
  });
  python::register_python_context(m);
  python::register_launch_hook(m);
  python::register_counters(m);  // hardware counters
  python::register_options(m);   // the mode grammar, environment variables
  python::register_control(m);   // always-on windows, schedules, the control socket
  // What a metric value may be, in the words of every refusal (python/proton/metric.py too).
  m.attr("_metric_values_accepted") = kAccepted;

#ifdef PROTON_HAVE_CUPTI
  m.def("_buffer_stats", [] {  // the CUPTI activity buffer pool (memory diagnostics)
    using D = cupti::Diagnostics;
    return counters_dict(cupti::diagnostics(),
                         {{"buffer_bytes", &D::buffer_bytes},
                          {"allocated", &D::buffers_allocated},
                          {"free", &D::buffers_free},
                          {"declined", &D::buffers_declined},
                          {"periodic_flushes", &D::periodic_flushes},
                          {"graph_level_fallbacks", &D::graph_level_fallbacks},
                          {"graph_trace_enables", &D::graph_trace_enables}});
  });
#ifdef PROTON_DIAGNOSTICS
  // The bench module's callback probe takes the subscriber's place through this hook
  // (subscriber_hook.h): the product's callback as an address to wrap, and the stand-in to use
  // at the next start (0: the product's own). Diagnostics builds only.
  m.def("_subscriber_callback_address", &cupti::product_callback_address);
  m.def("_set_subscriber_callback", &cupti::set_subscriber_callback_address);
#endif
  // PC sampling's counters (pc_sampling_stats.h): samples, full hardware buffers, sizes.
  m.def("_pc_sampling_stats", [] {
    using S = cupti::PcSamplingStats;
    S s = cupti::pc_sampling_stats();
    nb::dict d = counters_dict(s, {{"buffer_bytes", &S::buffer_bytes},
                                   {"scratch_bytes", &S::scratch_bytes},
                                   {"contexts", &S::contexts},
                                   {"drains", &S::drains},
                                   {"get_data_calls", &S::get_data_calls},
                                   {"samples", &S::samples},
                                   {"pc_records", &S::pc_records},
                                   {"buffer_full", &S::buffer_full},
                                   {"dropped", &S::dropped},
                                   {"non_user", &S::non_user},
                                   {"get_data_errors", &S::get_data_errors},
                                   {"bad_records", &S::bad_records},
                                   {"binaries", &S::binaries},
                                   {"binary_bytes", &S::binary_bytes},
                                   {"line_lookups", &S::line_lookups}});
    d["running"] = s.running;
    d["error"] = s.error;
    d["period_log2"] = s.period_log2;
    d["start_period_log2"] = s.start_period_log2;
    d["all_non_user_after_earlier"] = s.all_non_user_after_earlier;
    d["asked_period_log2"] = s.asked_period_log2;
    d["next_period_log2"] = s.next_period_log2;
    d["sleep_span_ms"] = s.sleep_span_ms;
    d["stall_reasons"] = s.stall_reasons;
    d["drain_ms_total"] = s.drain_ms_total;
    d["enable_ms"] = s.enable_ms;
    d["disable_ms"] = s.disable_ms;
    return d;
  });
#endif
  m.def("set_library_search_paths", &set_library_search_paths);

  // Which rank of a job this process is (python/proton/_ranks.py); written into every file.
  m.def("set_run_info", [](int64_t rank, int64_t world_size, int64_t local_rank, std::string host,
                           std::string device, std::string launcher) {
    set_run_info(RunInfo{rank, world_size, local_rank, std::move(host), std::move(device),
                         std::move(launcher)});
  });
  bind_instrumentation(m);  // intra-kernel instrumentation (instr_*)
}
