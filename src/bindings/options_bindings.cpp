// Bindings of session options: the mode grammar as a dict per mode (proton.mode builds its
// objects from it), Proton's environment variables for the Python layer, and a session's
// effective options (what start() would use; for tests and `proton --help`).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <optional>
#include <string>
#include <variant>

#include "options/environment.h"
#include "options/mode.h"
#include "options/session_options.h"

namespace nb = nanobind;

namespace proton::python {

namespace {

nb::dict mode_dict(const Mode& mode) {
  nb::dict d;
  d["kind"] = std::string(mode_kind(mode));
  if (const auto* p = std::get_if<PeriodicFlushing>(&mode)) {
    d["format"] = p->format;
  } else if (const auto* pc = std::get_if<PcSamplingOptions>(&mode)) {
    d["interval"] = pc->interval;
    d["buffer_mb"] = pc->buffer_bytes >> 20;
    d["sleep_ms"] = pc->sleep_span_ms;
    d["drain_ms"] = pc->drain_ms;
    d["adapt"] = pc->adapt;
  } else if (const auto* c = std::get_if<CounterConfig>(&mode)) {
    nb::list metrics;
    for (const auto& alternatives : c->metrics)
      metrics.append(alternatives.front());
    d["metrics"] = c->user_metrics ? nb::object(metrics) : nb::none();
    d["range"] = c->range_profiler
                     ? nb::object(nb::str(c->range == CounterRange::kAuto ? "auto" : "user"))
                     : nb::none();
    d["replay"] = c->replay;
    d["sampling"] = c->range_profiler && c->pm_sampling ? "both"
                    : c->range_profiler                 ? "range"
                                                        : "pm";
    d["interval_us"] = c->interval_us;
    d["canonical"] = c->canonical();
  } else if (const auto* m = std::get_if<InstrumentationMode>(&mode)) {
    std::string warps;
    for (uint32_t w : m->sampled_warps)
      warps += (warps.empty() ? "" : ",") + std::to_string(w);
    d["name"] = m->name;
    d["metric_type"] = m->metric_type;
    d["sampling_strategy"] = m->sampling_strategy;
    d["sampling_options"] = warps;
    d["granularity"] = m->granularity;
    d["buffer_strategy"] = m->buffer_strategy;
    d["buffer_type"] = m->buffer_type;
    d["buffer_size"] = m->buffer_size;
    if (m->optimizations) {
      nb::list names;
      for (const std::string& o : *m->optimizations)
        names.append(o);
      d["optimizations"] = names;
    } else {
      d["optimizations"] = nb::none();
    }
  }
  return d;
}

}  // namespace

SessionConfig session_config(std::string name, std::string context, std::string data,
                             std::string backend, std::string mode, bool kernel_records,
                             std::optional<bool> enable_nvtx, std::string cupti_lib_dir,
                             int64_t profile_buffer_size) {
  SessionConfig c;
  c.name = std::move(name);
  c.context = std::move(context);
  c.data = std::move(data);
  c.backend = std::move(backend);
  c.mode = std::move(mode);
  c.kernel_records = kernel_records;
  c.knobs = {enable_nvtx, std::move(cupti_lib_dir), profile_buffer_size};
  return c;
}

void register_options(nb::module_& m) {
  m.def(
      "parse_mode", [](std::string_view text) { return mode_dict(parse_mode(text)); },
      nb::arg("text"));
  m.def(
      "env_value", [](std::string_view name) { return env_value(name); }, nb::arg("name"));
  m.def("env_variables", [] {
    nb::list out;
    for (const EnvVariable& v : env_variables())
      out.append(nb::make_tuple(std::string(v.name), std::string(v.takes), std::string(v.does)));
    return out;
  });
  m.def(
      "session_options",
      [](std::string name, std::string context, std::string data, std::string backend,
         std::string mode, bool kernel_records, std::optional<bool> enable_nvtx,
         std::string cupti_lib_dir, int64_t profile_buffer_size) {
        SessionOptions o = make_session_options(
            session_config(std::move(name), std::move(context), std::move(data), std::move(backend),
                           std::move(mode), kernel_records, enable_nvtx, std::move(cupti_lib_dir),
                           profile_buffer_size),
            read_environment());
        nb::dict d;
        d["mode"] = mode_dict(o.mode);
        d["kernel_records"] = o.config.kernel_records;
        d["trace_budget_bytes"] = o.config.trace_budget_bytes;
        d["nvtx"] = o.backend.nvtx;
        d["cupti_path"] = o.backend.cupti_path;
        d["buffer_bytes"] = o.backend.buffer_bytes;
        return d;
      },
      nb::arg("name") = "proton", nb::arg("context") = "shadow", nb::arg("data") = "tree",
      nb::arg("backend") = "", nb::arg("mode") = "", nb::arg("kernel_records") = true,
      nb::arg("enable_nvtx") = nb::none(), nb::arg("cupti_lib_dir") = "",
      nb::arg("profile_buffer_size") = 0);
}

}  // namespace proton::python
