// A session's options: one typed set, built once (make_session_options) from the user's
// arguments, Triton's knobs (passed by the Python layer as arguments) and the environment
// (options/environment.h). The session layer keeps it; each backend receives only its part.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "backends/backend.h"
#include "backends/instrumentation/instr_options.h"
#include "options/environment.h"
#include "options/mode.h"

namespace proton {

/// triton.knobs.proton, as the Python layer read them; a PROTON_* variable wins over a knob.
struct TritonKnobs {
  std::optional<bool> enable_nvtx;  // knobs.proton.enable_nvtx; nullopt: not given (on)
  std::string cupti_lib_dir;        // knobs.proton.cupti_lib_dir when the user chose one
  /// knobs.proton.profile_buffer_size (TRITON_PROFILE_BUFFER_SIZE) when the user chose one: bytes
  /// per CUPTI activity buffer, as triton.profiler sizes them; 0 = not chosen (our default).
  int64_t profile_buffer_size = 0;
};

/// What the user asked proton.start for.
struct SessionConfig {
  std::string name = "proton";  // output path without extension (an extension is kept)
  std::string context = "shadow";
  std::string data = "tree";
  std::string backend;  // "" = pick the GPU backend of this machine
  std::string mode;
  /// data includes "trace": keep only the newest this-many bytes of events in memory (a flight
  /// recorder); 0 streams the whole trace to disk, unless PROTON_TRACE_BUDGET_MB sets one.
  uint64_t trace_budget_bytes = 0;
  /// CUPTI's kernel records (kernel time, kernel boxes). false: an instrumentation session that
  /// keeps region cycles only (unless PROTON_INSTR_KERNEL_TIME=1): the backend runs without them
  /// while no session times kernels, the session ignores those it is handed, and its trace
  /// places regions by the GPU's global timer in boxes from the CTAs' extent.
  bool kernel_records = true;
  TritonKnobs knobs = {};
  /// A window of an always-on process (control/): its number and the first and last step it
  /// kept, written on the root's frame; -1 where not a window or no schedule counts steps.
  int64_t window = -1;
  int64_t window_first_step = -1;
  int64_t window_last_step = -1;
};

/// What `data` asks for: "tree", "trace", or both ("tree,trace" / "trace,tree").
struct DataKinds {
  bool tree = false;
  bool trace = false;
};
/// Throws std::invalid_argument naming the accepted spellings.
DataKinds parse_data(const std::string& data);

struct SessionOptions {
  /// The arguments, with what the environment decides filled in (trace_budget_bytes,
  /// kernel_records).
  SessionConfig config;
  DataKinds data;
  Mode mode;
  bool python_context = false;  // context == "python"
  /// The GPU backend's options (it is started by the first session; later ones must agree on
  /// what is process-wide: graph level, counters).
  BackendOptions backend;
  instr::InstrOptions instr;

  bool graph() const { return std::holds_alternative<GraphMode>(mode); }
  const PcSamplingOptions* pc_sampling() const { return std::get_if<PcSamplingOptions>(&mode); }
  PeriodicFlushing periodic_flushing() const;
};

/// Checks everything (context, data, mode, the environment's values) and builds the options.
/// Throws std::invalid_argument naming the bad argument or variable. The GPU backend's
/// process-wide facts (local rank) are the caller's to add.
SessionOptions make_session_options(const SessionConfig& config, const Environment& env);

}  // namespace proton
