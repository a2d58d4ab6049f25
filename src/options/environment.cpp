#include "options/environment.h"

#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "options/duration.h"

namespace proton {

namespace {

constexpr std::array kVariables{
    EnvVariable{"PROTON_BUFFER_SIZE", "a buffer size in bytes from 1024 to 1073741824",
                "bytes of each CUPTI activity buffer (default 1 MB)"},
    EnvVariable{"PROTON_MAX_BUFFERS", "a number of buffers from 1 to 1048576",
                "activity buffers lent at once before CUPTI drops records (default 256; tests)"},
    EnvVariable{"PROTON_FLUSH_INTERVAL_MS", "a period in ms from 0 (off) to 60000",
                "period of the check that hands partly filled buffers over (default 20)"},
    EnvVariable{"PROTON_FLUSH_TAGS",
                "a number of launch tags from 0 (flush at every check) to 4294967296",
                "launches waiting for records before that check flushes (default 8192)"},
    EnvVariable{"PROTON_BUFFER_THREAD", "0 or 1 (also true/false, on/off)",
                "1: attribute completed buffers on a thread of ours (diagnostics)"},
    EnvVariable{"PROTON_LAUNCH_CALLBACKS", "one of 'auto', 'all', 'driver'",
                "which launch callbacks correlate kernels (diagnostics; default auto)"},
    EnvVariable{"PROTON_GRAPH_TRACE_EAGER", "0 or 1 (also true/false, on/off)",
                "mode='graph': enable graph-node tracing at start (comparisons)"},
    EnvVariable{"PROTON_CUPTI_FINALIZE", "0 or 1 (also true/false, on/off)",
                "1: detach CUPTI from the driver when the last session ends"},
    EnvVariable{"PROTON_CUPTI_PATH", "a file or folder holding libcupti",
                "which libcupti to load (wins over triton.knobs.proton.cupti_lib_dir)"},
    EnvVariable{"PROTON_NVTX", "0 or 1 (also true/false, on/off)",
                "0: NVTX ranges do not become scopes (wins over knobs.proton.enable_nvtx)"},
    EnvVariable{"PROTON_NVTX_DEBUG", "0 or 1 (also true/false, on/off)",
                "1: every NVTX push and pop on stderr"},
    EnvVariable{"PROTON_HOST_CALLS", "0 or 1 (also true/false, on/off)",
                "1: time synchronizes and blocking or pageable copies onto the call path (default "
                "off; `proton --advise` turns it on)"},
    EnvVariable{"PROTON_TRACE_BUDGET_MB", "a size in MB (e.g. 256, or 0 for no budget)",
                "trace sessions keep only their newest N MB of events (default: stream all)"},
    EnvVariable{"PROTON_COUNTER_BATCH", "a number of ranges from 1 to 1048576",
                "Range Profiler ranges per decode (default 512)"},
    EnvVariable{"PROTON_PM_BUFFER_MB", "a size in MB from 1 to 4096",
                "PM sampling's hardware buffer (default: sized from interval_us)"},
    EnvVariable{"PROTON_PM_IMAGE_SAMPLES", "a number of samples from 16 to 1048576",
                "PM sampling's counter-data image (default: sized from interval_us)"},
    EnvVariable{"PROTON_INSTR_POOL_MB", "a size in MB from 1 to 1048576",
                "device memory of each instrumentation session's pool (default 256)"},
    EnvVariable{"PROTON_INSTR_STAGING_MB", "a size in MB from 1 to 4096",
                "pinned staging arena of the instrumentation runtime (default 32)"},
    EnvVariable{"PROTON_INSTR_DECODERS", "a number of threads from 1 to 8",
                "instrumentation decoder threads (default half the CPUs, 3 to 8)"},
    EnvVariable{"PROTON_INSTR_GATHER_MS", "a period in ms from 1 to 1000",
                "how long the instrumentation consumer gathers launches (default 3)"},
    EnvVariable{"PROTON_INSTR_WAKE_BATCH", "a number of launches from 1 to 256",
                "launches that wake the instrumentation consumer early (default 256)"},
    EnvVariable{"PROTON_INSTR_KERNEL_TIME", "0 or 1 (also true/false, on/off)",
                "1: instrumentation sessions also time kernels with CUPTI"},
    EnvVariable{"PROTON_IDLE", "0 or 1 (also true/false, on/off)",
                "1: load Proton idle (hooks and control, no session) until a window opens"},
    EnvVariable{"PROTON_CONTROL_DIR", "a folder path",
                "where control sockets live (default $XDG_RUNTIME_DIR/proton or /tmp/proton-UID)"},
    EnvVariable{"PROTON_CONTROL_SIGNAL", "one of 'usr2', 'usr1', 'off'",
                "the signal that toggles a window in an idle process (default usr2)"},
    EnvVariable{"PROTON_FLUSH_EVERY", "a time from 1ms to 24h (e.g. 10s, 500ms, 2m)",
                "idle mode (PROTON_IDLE=1, proton --idle): write an open window's tree that often"},
    EnvVariable{"PROTON_RANK_PATTERN", "a file name pattern",
                "per-rank output name of multi-process runs (as proton --rank-pattern)"},
    EnvVariable{"PROTON_VIEWER", "the path of a proton-viewer binary",
                "which proton-viewer proton.viewer runs"},
};

const EnvVariable& variable(std::string_view name) {
  for (const EnvVariable& v : kVariables) {
    if (v.name == name) return v;
  }
  throw std::invalid_argument("'" + std::string(name) + "' is not one of Proton's variables");
}

// The value of `name`, nullptr when unset or empty (both keep the default).
const char* raw(std::string_view name) {
  const char* s = std::getenv(std::string(name).c_str());
  return s == nullptr || *s == 0 ? nullptr : s;
}

[[noreturn]] void bad(std::string_view name, const char* value) {
  throw std::invalid_argument(std::string(name) + "='" + value + "' is not " +
                              std::string(variable(name).takes));
}

std::optional<uint64_t> uint_var(std::string_view name, uint64_t lo, uint64_t hi) {
  const char* s = raw(name);
  if (s == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != 0 || errno != 0 || *s == '-' || *s == '+' || v < lo || v > hi) {
    bad(name, s);
  }
  return v;
}

std::optional<uint32_t> uint32_var(std::string_view name, uint32_t lo, uint32_t hi) {
  std::optional<uint64_t> v = uint_var(name, lo, hi);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(*v);
}

std::optional<bool> bool_var(std::string_view name) {
  const char* s = raw(name);
  if (s == nullptr) return std::nullopt;
  std::string v;
  for (const char* p = s; *p != 0; ++p)
    v += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
  if (v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  bad(name, s);
}

std::string choice_var(std::string_view name, std::initializer_list<std::string_view> allowed) {
  const char* s = raw(name);
  if (s == nullptr) return {};
  for (std::string_view a : allowed) {
    if (a == s) return s;
  }
  bad(name, s);
}

std::string string_var(std::string_view name) {
  const char* s = raw(name);
  return s == nullptr ? std::string() : std::string(s);
}

std::optional<uint64_t> duration_var(std::string_view name) {
  const char* s = raw(name);
  if (s == nullptr) return std::nullopt;
  std::optional<uint64_t> ms = parse_duration_ms(s);
  if (!ms) bad(name, s);
  return ms;
}

std::optional<uint64_t> megabytes_var(std::string_view name) {
  const char* s = raw(name);
  if (s == nullptr) return std::nullopt;
  char* end = nullptr;
  double mb = std::strtod(s, &end);
  if (end == s || *end != 0 || !std::isfinite(mb) || mb < 0 || mb > 1e9) bad(name, s);
  return static_cast<uint64_t>(mb * 1024 * 1024);
}

}  // namespace

std::span<const EnvVariable> env_variables() {
  return kVariables;
}

Environment read_environment() {
  Environment e;
  e.buffer_bytes = uint_var("PROTON_BUFFER_SIZE", static_cast<uint64_t>(kMinBufferBytes),
                            static_cast<uint64_t>(kMaxBufferBytes));
  e.max_buffers = uint_var("PROTON_MAX_BUFFERS", 1, 1 << 20);
  e.flush_interval_ms = uint32_var("PROTON_FLUSH_INTERVAL_MS", 0, 60'000);
  e.flush_tags = uint_var("PROTON_FLUSH_TAGS", 0, uint64_t{1} << 32);
  e.buffer_thread = bool_var("PROTON_BUFFER_THREAD");
  e.launch_callbacks = choice_var("PROTON_LAUNCH_CALLBACKS", {"auto", "all", "driver"});
  e.graph_trace_eager = bool_var("PROTON_GRAPH_TRACE_EAGER");
  e.cupti_finalize = bool_var("PROTON_CUPTI_FINALIZE");
  e.cupti_path = string_var("PROTON_CUPTI_PATH");
  e.nvtx = bool_var("PROTON_NVTX");
  e.nvtx_debug = bool_var("PROTON_NVTX_DEBUG");
  e.host_calls = bool_var("PROTON_HOST_CALLS");
  e.trace_budget_bytes = megabytes_var("PROTON_TRACE_BUDGET_MB");
  e.counter_batch = uint32_var("PROTON_COUNTER_BATCH", 1, 1 << 20);
  e.pm_buffer_mb = uint32_var("PROTON_PM_BUFFER_MB", 1, 4096);
  e.pm_image_samples = uint32_var("PROTON_PM_IMAGE_SAMPLES", 16, 1 << 20);
  e.instr_pool_mb = uint_var("PROTON_INSTR_POOL_MB", 1, 1 << 20);
  e.instr_staging_mb = uint_var("PROTON_INSTR_STAGING_MB", 1, 4096);
  e.instr_decoders = uint32_var("PROTON_INSTR_DECODERS", 1, 8);
  e.instr_gather_ms = uint32_var("PROTON_INSTR_GATHER_MS", 1, 1000);
  e.instr_wake_batch = uint32_var("PROTON_INSTR_WAKE_BATCH", 1, 256);
  e.instr_kernel_time = bool_var("PROTON_INSTR_KERNEL_TIME");
  e.idle = bool_var("PROTON_IDLE");
  e.control_dir = string_var("PROTON_CONTROL_DIR");
  e.control_signal = choice_var("PROTON_CONTROL_SIGNAL", {"usr2", "usr1", "off"});
  e.flush_every_ms = duration_var("PROTON_FLUSH_EVERY");
  e.rank_pattern = string_var("PROTON_RANK_PATTERN");
  e.viewer = string_var("PROTON_VIEWER");
  return e;
}

std::string env_value(std::string_view name) {
  return string_var(variable(name).name);
}

}  // namespace proton
