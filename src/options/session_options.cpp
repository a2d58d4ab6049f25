#include "options/session_options.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace proton {

namespace {

void check_context(const std::string& context) {
  if (context != "shadow" && context != "python") {
    throw std::invalid_argument("unknown context '" + context + "' (expected 'shadow', 'python')");
  }
}

BackendOptions backend_options(const SessionOptions& o, const Environment& env) {
  BackendOptions b;
  // PROTON_BUFFER_SIZE wins over Triton's knob, which wins over the default (1 MB, not
  // Triton's 64 MB: a buffer is handed over when full or at the periodic flush).
  if (int64_t knob = o.config.knobs.profile_buffer_size; knob != 0) {
    if (knob < kMinBufferBytes || knob > kMaxBufferBytes) {
      throw std::invalid_argument(
          "triton.knobs.proton.profile_buffer_size (TRITON_PROFILE_BUFFER_SIZE) is " +
          std::to_string(knob) + ": not a buffer size in bytes from " +
          std::to_string(kMinBufferBytes) + " to " + std::to_string(kMaxBufferBytes));
    }
    b.buffer_bytes = static_cast<size_t>(knob);
  }
  b.buffer_bytes = env.buffer_bytes.value_or(b.buffer_bytes);
  b.max_buffers = env.max_buffers.value_or(b.max_buffers);
  b.flush_interval_ms = env.flush_interval_ms.value_or(b.flush_interval_ms);
  b.flush_tags = env.flush_tags.value_or(b.flush_tags);
  b.buffer_thread = env.buffer_thread.value_or(b.buffer_thread);
  if (env.launch_callbacks == "all") b.launch_callbacks = BackendOptions::LaunchCallbacks::kAll;
  if (env.launch_callbacks == "driver") {
    b.launch_callbacks = BackendOptions::LaunchCallbacks::kDriver;
  }
  b.graph_level = o.graph();
  b.graph_trace_eager = env.graph_trace_eager.value_or(false);
  b.kernel_records = o.config.kernel_records;
  // Our own variable wins over Triton's knob, which wins over the default.
  b.nvtx = env.nvtx.value_or(o.config.knobs.enable_nvtx.value_or(true));
  b.nvtx_debug = env.nvtx_debug.value_or(false);
  // Off unless asked: the call-path tree stays the one triton.profiler writes.
  b.host_calls = env.host_calls.value_or(false);
  b.cupti_path = !env.cupti_path.empty() ? env.cupti_path : o.config.knobs.cupti_lib_dir;
  b.cupti_finalize = env.cupti_finalize.value_or(false);
  if (const auto* counters = std::get_if<CounterConfig>(&o.mode)) {
    b.counters = *counters;
    b.counters.range_batch = env.counter_batch.value_or(0);
    b.counters.pm_buffer_mb = env.pm_buffer_mb.value_or(0);
    b.counters.pm_image_samples = env.pm_image_samples.value_or(0);
  }
  return b;
}

instr::InstrOptions instr_options(const Environment& env) {
  instr::InstrOptions i;
  i.pool_bytes = env.instr_pool_mb.value_or(0) << 20;
  i.staging_bytes = env.instr_staging_mb.value_or(0) << 20;
  i.decoders = env.instr_decoders.value_or(0);
  i.gather_ms = env.instr_gather_ms.value_or(0);
  i.wake_batch = env.instr_wake_batch.value_or(0);
  return i;
}

// backend="instrumentation": its mode ("" = the default one), checked for what Triton's passes
// can compile, before any session exists.
InstrumentationMode instrumentation_mode(const Mode& parsed, const std::string& text) {
  if (std::holds_alternative<KernelTimingMode>(parsed)) return InstrumentationMode{};
  const auto* m = std::get_if<InstrumentationMode>(&parsed);
  if (m == nullptr) {
    throw std::invalid_argument("backend='instrumentation' takes an instrumentation mode, not '" +
                                text + "'");
  }
  if (m->granularity != "warp" && m->sampling_strategy == "selective") {
    std::string warps;
    for (uint32_t w : m->sampled_warps)
      warps += (warps.empty() ? "" : ",") + std::to_string(w);
    throw std::invalid_argument("granularity '" + m->granularity +
                                "' records each group's first warp: it cannot be combined with "
                                "selective sampling (sampling_options='" +
                                warps + "'); use one or the other");
  }
  if (m->buffer_strategy != "circular") {
    throw std::invalid_argument("buffer_strategy '" + m->buffer_strategy +
                                "': Triton's passes implement only 'circular'");
  }
  return *m;
}

}  // namespace

DataKinds parse_data(const std::string& data) {
  DataKinds kinds;
  size_t begin = 0;
  while (begin <= data.size()) {
    size_t end = std::min(data.find(',', begin), data.size());
    std::string part = data.substr(begin, end - begin);
    if (part == "tree") {
      kinds.tree = true;
    } else if (part == "trace") {
      kinds.trace = true;
    } else {
      throw std::invalid_argument("unknown data '" + data +
                                  "' (expected 'tree', 'trace' or 'tree,trace')");
    }
    begin = end + 1;
  }
  return kinds;
}

PeriodicFlushing SessionOptions::periodic_flushing() const {
  const auto* p = std::get_if<PeriodicFlushing>(&mode);
  return p != nullptr ? *p : PeriodicFlushing{};
}

SessionOptions make_session_options(const SessionConfig& config, const Environment& env) {
  SessionOptions o;
  o.config = config;
  check_context(config.context);
  o.python_context = config.context == "python";
  o.data = parse_data(config.data);
  o.mode = parse_mode(config.mode);
  const bool instrumented = config.backend == "instrumentation";
  if (instrumented) {
    o.mode = instrumentation_mode(o.mode, config.mode);
  } else if (std::holds_alternative<InstrumentationMode>(o.mode)) {
    throw std::invalid_argument("mode '" + config.mode +
                                "' is an instrumentation mode: start the session with "
                                "backend='instrumentation'");
  }
  if (PeriodicFlushing p = o.periodic_flushing(); p.enabled) {
    if (p.format == "chrome_trace" && !o.data.trace) {
      throw std::invalid_argument(
          "mode 'periodic_flushing:format=chrome_trace' writes a trace per phase; it needs "
          "data='trace' or data='tree,trace', not '" +
          config.data + "'");
    }
    if (p.format != "chrome_trace" && !o.data.tree) {
      throw std::invalid_argument(
          "mode 'periodic_flushing' writes call trees; it needs data='tree' "
          "or data='tree,trace', not '" +
          config.data + "'");
    }
  }
  if (o.config.trace_budget_bytes == 0) {
    o.config.trace_budget_bytes = env.trace_budget_bytes.value_or(0);
  }
  // Instrumentation sessions keep region cycles only (as triton.profiler records them: their
  // launches cost no CUPTI kernel record) unless the user asks for kernel time too, or a
  // session timing kernels runs beside (docs/instrumentation.md, "Wall time").
  o.config.kernel_records =
      (config.kernel_records && !instrumented) || env.instr_kernel_time.value_or(false);
  o.backend = backend_options(o, env);
  o.instr = instr_options(env);
  return o;
}

}  // namespace proton
