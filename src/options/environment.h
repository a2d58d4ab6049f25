// Proton's own environment variables (PROTON_*), read in one place and checked by one rule: an
// unset or empty variable keeps the default; any other value outside what the variable takes is
// an error naming the variable, its value and what it takes. The session layer reads them at
// every start, before anything changes, so a bad value fails start() and leaves nothing half
// made; backends receive the values in their own options and never read the environment.
//
// README.md, "Environment variables", lists every variable of kVariables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace proton {

/// One variable: its name, what it takes (the end of the error message "... is not <takes>")
/// and what it does (one line, for docs and `proton --help`).
struct EnvVariable {
  std::string_view name;
  std::string_view takes;
  std::string_view does;
};

/// Every PROTON_* variable the product reads (the viewer's and the build's are not here).
std::span<const EnvVariable> env_variables();

/// The bytes a CUPTI activity buffer may have (PROTON_BUFFER_SIZE, Triton's profile_buffer_size).
inline constexpr int64_t kMinBufferBytes = 1024;
inline constexpr int64_t kMaxBufferBytes = int64_t{1} << 30;

/// The variables' values; std::nullopt / "" where unset (the consumer keeps its default).
struct Environment {
  // Kernel timing (the GPU backend).
  std::optional<uint64_t> buffer_bytes;       // PROTON_BUFFER_SIZE (kMin/kMaxBufferBytes)
  std::optional<uint64_t> max_buffers;        // PROTON_MAX_BUFFERS
  std::optional<uint32_t> flush_interval_ms;  // PROTON_FLUSH_INTERVAL_MS
  std::optional<uint64_t> flush_tags;         // PROTON_FLUSH_TAGS
  std::optional<bool> buffer_thread;          // PROTON_BUFFER_THREAD
  std::string launch_callbacks;               // PROTON_LAUNCH_CALLBACKS: auto | all | driver
  std::optional<bool> graph_trace_eager;      // PROTON_GRAPH_TRACE_EAGER
  std::optional<bool> cupti_finalize;         // PROTON_CUPTI_FINALIZE
  std::string cupti_path;                     // PROTON_CUPTI_PATH
  std::optional<bool> nvtx;                   // PROTON_NVTX
  std::optional<bool> nvtx_debug;             // PROTON_NVTX_DEBUG
  std::optional<bool> host_calls;             // PROTON_HOST_CALLS
  // Trace sessions.
  std::optional<uint64_t> trace_budget_bytes;  // PROTON_TRACE_BUDGET_MB (a fraction allowed)
  // Hardware counters.
  std::optional<uint32_t> counter_batch;     // PROTON_COUNTER_BATCH
  std::optional<uint32_t> pm_buffer_mb;      // PROTON_PM_BUFFER_MB
  std::optional<uint32_t> pm_image_samples;  // PROTON_PM_IMAGE_SAMPLES
  // Instrumentation.
  std::optional<uint64_t> instr_pool_mb;     // PROTON_INSTR_POOL_MB
  std::optional<uint64_t> instr_staging_mb;  // PROTON_INSTR_STAGING_MB
  std::optional<uint32_t> instr_decoders;    // PROTON_INSTR_DECODERS
  std::optional<uint32_t> instr_gather_ms;   // PROTON_INSTR_GATHER_MS
  std::optional<uint32_t> instr_wake_batch;  // PROTON_INSTR_WAKE_BATCH
  std::optional<bool> instr_kernel_time;     // PROTON_INSTR_KERNEL_TIME
  // Always-on control (control/).
  std::optional<bool> idle;                // PROTON_IDLE
  std::string control_dir;                 // PROTON_CONTROL_DIR
  std::string control_signal;              // PROTON_CONTROL_SIGNAL: usr2 | usr1 | off
  std::optional<uint64_t> flush_every_ms;  // PROTON_FLUSH_EVERY (options/duration.h's grammar)
  // Read by the Python layer through env_value() (named here so that one table lists all).
  std::string rank_pattern;  // PROTON_RANK_PATTERN
  std::string viewer;        // PROTON_VIEWER
};

/// Reads and checks every variable. Throws std::invalid_argument for the first bad one:
/// "PROTON_BUFFER_SIZE='1MB' is not a buffer size in bytes from 1024 to 1073741824".
Environment read_environment();

/// The raw value of one variable of env_variables() ("" when unset), for the Python layer's
/// path-like variables (PROTON_RANK_PATTERN, PROTON_VIEWER). Throws std::invalid_argument for a
/// name that is not one of ours.
std::string env_value(std::string_view name);

}  // namespace proton
