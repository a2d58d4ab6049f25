// hook="triton": Triton's launch enter/exit hooks, in C++ so a hooked launch stays cheap.
//
// Triton (3.4+) calls every function in knobs.runtime.launch_enter_hook with a LazyDict just
// before cuLaunchKernel, and launch_exit_hook just after, both with the GIL held. `data` holds
// {"name", "function", "stream"}; `extras` holds the kernel's launch_metadata function and its
// (grid, metadata, args) if it has one, which LazyDict.get() calls and merges in.
//
// enter: no active session, a nested call (a Triton kernel launched by a metadata function)
// or a kernel name the include/exclude filter rejects -> nothing. Otherwise the metadata
// function runs under the state "__proton_launch_metadata" (so kernels it launches, e.g. a
// tensor op, land under that frame, which viewers hide, as in triton.profiler); its result
// becomes a LaunchOp (name -> the kernel node's name; numeric entries -> metrics; GPU tensors
// -> device accumulator slots, summed by proton.metric with no host synchronization) marked
// pending on this thread; the launch callback moves it into the launch's tag.
// exit: clears the pending op (a launch that never reached the driver must not pass it on).
// Every launch enter lets through also numbers the launch and keeps its (evaluated) name on this
// thread: triton.profiler's proton.hooks.launch.id and op_name, which keep their values after
// exit, as Triton's context variables do. Python reads them only when asked (no Python work per
// launch).
//
// State shared across calls (filter, decisions, metric types) is guarded by the GIL: Triton
// calls the hooks holding it.
#include "bindings/launch_hook.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "attribution/launch_stage.h"
#include "common/name_table.h"
#include "context/launch_ops.h"
#include "context/thread_context.h"
#include "data/call_tree.h"
#include "data/compiled_kernels.h"
#include "data/metric.h"
#include "io/hatchet_writer.h"
#include "session/runtime.h"

namespace nb = nanobind;

namespace proton::python {

namespace {

constexpr std::string_view kMetadataState = "__proton_launch_metadata";

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};

// Guarded by the GIL. Leaked on purpose: the interpreter may be gone when statics are freed.
struct HookState {
  PyObject* filter = nullptr;  // callable(name) -> bool, or null for "every kernel"
  // proton.metric.launch_value(name, kernel, tensor): a number for a host tensor, or
  // (accumulator slot, typed zero) for a device tensor whose value it added on the device.
  PyObject* tensor_converter = nullptr;
  std::unordered_map<std::string, bool, StringHash, std::equal_to<>> decisions;
  std::unordered_map<NameId, MetricType> metric_types;
  std::unordered_set<std::string, StringHash, std::equal_to<>>
      warned;  // clashing keys; non-finite (metric, kernel)
};
HookState& state() {
  static auto* s = new HookState();
  return *s;
}

// Set while this thread runs a metadata function: Triton kernels it launches are not hooked.
constinit thread_local bool tls_in_metadata = false;

// proton.hooks.launch.id / op_name of this thread (0 / null: none yet). The name is a strong
// reference, replaced under the GIL; a thread's last one is left at its exit (the interpreter
// may be gone by then).
std::atomic<uint64_t> g_launch_ids{0};
constinit thread_local uint64_t tls_launch_id = 0;
constinit thread_local PyObject* tls_launch_name = nullptr;

void set_launch_name(PyObject* name) {
  Py_XINCREF(name);
  PyObject* old = tls_launch_name;
  tls_launch_name = name;
  Py_XDECREF(old);
}

// A launch `enter` lets through: a new number, and its name (the evaluated one when the
// metadata function gave a str "name", else the kernel's).
void note_launch(PyObject* name) {
  tls_launch_id = g_launch_ids.fetch_add(1, std::memory_order_relaxed) + 1;
  set_launch_name(name);
}

bool accepted(std::string_view kernel) {
  HookState& s = state();
  if (s.filter == nullptr) return true;
  if (auto it = s.decisions.find(kernel); it != s.decisions.end()) return it->second;
  nb::object verdict = nb::borrow(s.filter)(nb::str(kernel.data(), kernel.size()));
  bool ok = nb::cast<bool>(verdict);
  s.decisions.emplace(std::string(kernel), ok);
  return ok;
}

// Runs LazyDict.get() with the metadata state set and the previous state restored after,
// whatever the metadata function does.
nb::object evaluate(nb::handle lazy) {
  ThreadContext& tc = ThreadContext::current();
  NameId previous = tc.state();
  static const NameId metadata_state = NameTable::global().intern(kMetadataState);
  tc.set_state(metadata_state);
  tls_in_metadata = true;
  struct Restore {
    ThreadContext& tc;
    NameId previous;
    ~Restore() {
      tls_in_metadata = false;
      tc.set_state(previous);
    }
  } restore{tc, previous};
  return lazy.attr("get")();
}

bool reserved(std::string_view key) {
  return key == "name" || key == "function" || key == "stream";
}

// A metadata key that names a metric Proton writes on every kernel node would clash with it:
// ignored, with one warning per key.
bool clashes_with_kernel_column(std::string_view key) {
  if (!is_kernel_column(key)) return false;
  HookState& s = state();
  if (s.warned.emplace(key).second) {
    std::string msg = "launch_metadata key '" + std::string(key) +
                      "' names a metric proton records for every kernel itself; it is ignored "
                      "(rename it to keep it)";
    if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) != 0) throw nb::python_error();
  }
  return true;
}

// An int of launch metadata, range-checked: 2**70 is a one-line OverflowError naming the metric
// and the kernel, not a failed cast. Bools stay 0/1 counts, as triton.profiler records them.
int64_t metadata_int(std::string_view name, std::string_view kernel, nb::handle v) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0) {
    std::string msg = "launch_metadata metric '" + std::string(name) + "' of kernel '" +
                      std::string(kernel) +
                      "': the value is an int outside the 64-bit signed range (accepted: an int "
                      "in [-2**63, 2**63-1] or a float)";
    PyErr_SetString(PyExc_OverflowError, msg.c_str());
    throw nb::python_error();
  }
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  return static_cast<int64_t>(x);
}

// A NaN or infinite metadata value is recorded; the user hears of it once per metric and kernel.
double metadata_float(std::string_view name, std::string_view kernel, nb::handle v) {
  double d = nb::cast<double>(v);
  if (!std::isfinite(d) &&
      state().warned.emplace(std::string(name) + '\0' + std::string(kernel)).second) {
    std::string msg = "proton: launch_metadata metric '" + std::string(name) + "' of kernel '" +
                      std::string(kernel) + "' is " +
                      (std::isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf")) +
                      "; it is recorded as such, and every inclusive sum that contains it is "
                      "too (warned once per metric and kernel)";
    if (PyErr_WarnEx(PyExc_RuntimeWarning, msg.c_str(), 1) != 0) throw nb::python_error();
  }
  return d;
}

// A Python int or float as a metric (coerced by its name); false for anything else.
bool number_metric(std::string_view name, std::string_view kernel, nb::handle v, MetricValue& out) {
  if (nb::isinstance<nb::int_>(v)) {
    out = metadata_int(name, kernel, v);
  } else if (nb::isinstance<nb::float_>(v)) {
    out = metadata_float(name, kernel, v);
  } else {
    return false;
  }
  out = coerce_metric(name, std::move(out));
  return true;
}

// A metadata value as a metric; false for values that are not numbers (ignored, as Triton
// does). Scalars of numpy/torch convert through item().
bool to_metric(std::string_view name, std::string_view kernel, nb::handle v, MetricValue& out) {
  if (number_metric(name, kernel, v, out)) return true;
  if (v.is_none() || !nb::hasattr(v, "item")) return false;
  return number_metric(name, kernel, v.attr("item")(), out);
}

// A tensor value: through proton.metric (no host synchronization for a device tensor). Returns
// false to ignore the value; sets `slot` (else UINT32_MAX) when the value stays on the device.
bool tensor_metric(std::string_view name, std::string_view kernel, nb::handle v, MetricValue& out,
                   uint32_t& slot) {
  nb::object r = nb::borrow(state().tensor_converter)(nb::str(name.data(), name.size()),
                                                      nb::str(kernel.data(), kernel.size()), v);
  if (r.is_none()) return false;
  if (!nb::isinstance<nb::tuple>(r)) return number_metric(name, kernel, r, out);
  slot = nb::cast<uint32_t>(r[0]);
  return number_metric(name, kernel, r[1], out);
}

void check_type(NameId metric, std::string_view name, const MetricValue& v) {
  auto [it, added] = state().metric_types.emplace(metric, metric_type(v));
  if (!added && it->second != metric_type(v)) {
    throw MetricTypeError("Metric value type mismatch for valueId of launch_metadata metric '" +
                          std::string(name) + "': it was " + metric_type_name(it->second) +
                          ", now " + metric_type_name(metric_type(v)));
  }
}

void launch_enter(nb::handle lazy) {
  if (LaunchStage::active_sessions.load(std::memory_order_relaxed) == 0) return;
  if (tls_in_metadata) return;
  LaunchOps::set_pending(0);
  nb::handle data = lazy.attr("data");
  PyObject* kernel = PyDict_GetItemString(data.ptr(), "name");  // borrowed
  if (kernel == nullptr || !PyUnicode_Check(kernel)) return;
  Py_ssize_t len = 0;
  const char* text = PyUnicode_AsUTF8AndSize(kernel, &len);
  if (text == nullptr) throw nb::python_error();
  if (!accepted(std::string_view(text, static_cast<size_t>(len)))) return;
  // No launch_metadata function: nothing beyond the kernel's own name to attach.
  nb::object extras = lazy.attr("extras");
  if (nb::len(extras) == 0) {
    note_launch(kernel);
    return;
  }
  nb::object result = evaluate(lazy);
  if (!nb::isinstance<nb::dict>(result)) {
    note_launch(kernel);
    return;
  }
  nb::dict md = nb::borrow<nb::dict>(result);
  PyObject* renamed = PyDict_GetItemString(md.ptr(), "name");  // borrowed
  note_launch(renamed != nullptr && PyUnicode_Check(renamed) ? renamed : kernel);
  NameId name = kNoName;
  std::vector<std::pair<NameId, MetricValue>> metrics;
  std::vector<std::pair<NameId, uint32_t>> device_slots;
  std::string_view kernel_name(text, static_cast<size_t>(len));
  for (auto [k, v] : md) {
    if (!nb::isinstance<nb::str>(k)) continue;
    std::string_view key = nb::cast<std::string_view>(k);
    if (key == "name") {
      if (nb::isinstance<nb::str>(v))
        name = NameTable::global().intern(nb::cast<std::string_view>(v));
      continue;
    }
    if (reserved(key) || clashes_with_kernel_column(key)) continue;
    MetricValue value;
    uint32_t slot = UINT32_MAX;
    if (state().tensor_converter != nullptr && !nb::isinstance<nb::int_>(v) &&
        !nb::isinstance<nb::float_>(v) && nb::hasattr(v, "data_ptr")) {
      // A device tensor is added to an accumulator on the device (a tiny kernel, launched
      // here while no op is pending, under the metadata state): nothing waits for the GPU.
      if (!tensor_metric(key, kernel_name, v, value, slot)) continue;
    } else if (!to_metric(key, kernel_name, v, value)) {
      continue;
    }
    NameId metric = NameTable::global().intern(key);
    check_type(metric, key, value);
    if (slot != UINT32_MAX) {
      device_slots.emplace_back(metric, slot);
      // The typed zero creates the metric on the kernel node with each launch (a property
      // would be overwritten by it: its value comes only from the read-back).
      if (metric_rule(key) == MetricRule::kProperty) continue;
    }
    metrics.emplace_back(metric, std::move(value));
  }
  LaunchOps::set_pending(
      LaunchOps::global().intern(name, std::move(metrics), std::move(device_slots)));
}

void launch_exit(nb::handle) {
  if (!tls_in_metadata) LaunchOps::set_pending(0);
}

}  // namespace

void register_launch_hook(nb::module_& m) {
  m.def("_launch_enter", &launch_enter, nb::arg("metadata"));
  m.def("_launch_exit", &launch_exit, nb::arg("metadata"));
  // A callable kept in HookState (a strong reference; None clears it).
  auto keep = [](PyObject*& held, nb::handle fn) {
    Py_XDECREF(held);
    held = fn.is_none() ? nullptr : fn.inc_ref().ptr();
  };
  m.def(
      "_set_launch_filter",
      [keep](nb::handle filter) {
        keep(state().filter, filter);
        state().decisions.clear();
      },
      nb::arg("filter").none());
  m.def(
      "_set_launch_tensor_converter", [keep](nb::handle fn) { keep(state().tensor_converter, fn); },
      nb::arg("fn").none());
  // proton.metric.fold: a device slot's value read back, to the kernel nodes of `session` that
  // its launches reached; and the flush that delivers those kernels first.
  m.def("_add_launch_slot",
        [](SessionId session, uint32_t slot, std::string_view name, nb::handle value) {
          MetricValue v;
          if (nb::isinstance<nb::int_>(value)) {
            v = metadata_int(name, "", value);
          } else {
            v = nb::cast<double>(value);
          }
          return Runtime::get().add_device_slot_value(
              session, slot, NameTable::global().intern(name), coerce_metric(name, std::move(v)));
        });
  m.def(
      "_flush_records", [] { Runtime::get().flush(); }, nb::call_guard<nb::gil_scoped_release>());
  // Test hooks: how many ops exist, the op pending on this thread, and an op's content.
  m.def("_launch_ops", [] { return LaunchOps::global().size() - 1; });
  m.def("_launch_op", [](uint32_t id) {
    if (id == 0 || id >= LaunchOps::global().size()) throw nb::index_error("no such launch op");
    const LaunchOp& op = LaunchOps::global().get(id);
    nb::dict metrics;
    for (const auto& [metric, value] : op.metrics) {
      nb::str key(NameTable::global().name(metric).data(), NameTable::global().name(metric).size());
      if (const auto* i = std::get_if<int64_t>(&value)) {
        metrics[key] = *i;
      } else if (const auto* d = std::get_if<double>(&value)) {
        metrics[key] = *d;
      }
    }
    nb::object name = nb::none();
    if (op.name != kNoName) {
      std::string_view n = NameTable::global().name(op.name);
      name = nb::str(n.data(), n.size());
    }
    return nb::make_tuple(name, metrics);
  });
  // An op's device metrics: name -> accumulator slot.
  m.def("_launch_op_slots", [](uint32_t id) {
    if (id == 0 || id >= LaunchOps::global().size()) throw nb::index_error("no such launch op");
    nb::dict slots;
    for (const auto& [metric, slot] : LaunchOps::global().get(id).device_slots) {
      std::string_view n = NameTable::global().name(metric);
      slots[nb::str(n.data(), n.size())] = slot;
    }
    return slots;
  });
  // proton.hooks.launch.id and op_name of the calling thread (None when unset), and their
  // setters (ContextVar.set from Python).
  m.def("_launch_id", []() -> nb::object {
    if (tls_launch_id == 0) return nb::none();
    return nb::int_(tls_launch_id);
  });
  m.def("_launch_op_name", []() -> nb::object {
    if (tls_launch_name == nullptr) return nb::none();
    return nb::borrow(tls_launch_name);
  });
  m.def(
      "_set_launch_id", [](std::optional<uint64_t> id) { tls_launch_id = id.value_or(0); },
      nb::arg("id").none());
  m.def(
      "_set_launch_op_name",
      [](std::optional<nb::str> name) { set_launch_name(name ? name->ptr() : nullptr); },
      nb::arg("name").none());
  // One compiled Triton kernel's facts, handed over once when Triton loads it
  // (hooks/compiled.py); the writer joins them to the kernel nodes.
  m.def(
      "_note_compiled_kernel",
      [](std::string name, int64_t num_warps, int64_t num_stages, int64_t num_ctas,
         int64_t shared_bytes, int64_t n_regs, int64_t n_spills, std::string config,
         std::string source) {
        CompiledKernels::global().add({std::move(name), num_warps, num_stages, num_ctas,
                                       shared_bytes, n_regs, n_spills, std::move(config),
                                       std::move(source)});
      },
      nb::arg("name"), nb::arg("num_warps") = -1, nb::arg("num_stages") = -1,
      nb::arg("num_ctas") = -1, nb::arg("shared") = -1, nb::arg("n_regs") = -1,
      nb::arg("n_spills") = -1, nb::arg("config") = "", nb::arg("source") = "");
  m.def("_compiled_kernels", [] {
    nb::list out;
    for (const CompiledKernel& k : CompiledKernels::global().snapshot()) {
      out.append(nb::make_tuple(k.name, k.num_warps, k.num_stages, k.num_ctas, k.shared_bytes,
                                k.n_regs, k.n_spills, k.config, k.source));
    }
    return out;
  });
  m.def("_clear_compiled_kernels", [] { CompiledKernels::global().clear(); });
  m.def("_pending_launch_op", [] {
    uint32_t op = LaunchOps::take_pending();
    LaunchOps::set_pending(op);
    return op;
  });
}

}  // namespace proton::python
