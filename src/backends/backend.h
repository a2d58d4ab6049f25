// What a GPU backend (CUPTI, ROCm, ...) provides to the session layer.
//
// A backend does two things: on each kernel launch it calls LaunchStage::tag() from the launch
// callback (the hot path), and when activity records complete it translates them to
// KernelRecords and hands them to the RecordProcessor it was given. It never knows about
// sessions, trees or output formats.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "attribution/flush_policy.h"
#include "backends/pc_sampling_options.h"
#include "common/clock.h"
#include "data/counter_config.h"
#include "data/device_info.h"

namespace proton {

class RecordProcessor;

struct BackendOptions {
  // 1 MB buffers (~4,800 kernel records): CUPTI hands one over when it fills (or when the
  // periodic check below flushes), and a pool that grows by one buffer grows resident memory
  // by 1 MB, not 4. 256 of them cover over a second of the fastest launch loops before records
  // drop.
  size_t buffer_bytes = 1u << 20;  // size of each activity buffer
  size_t max_buffers = 256;        // buffers in flight before records are dropped
  // Buffers allocated (and made resident) at start: CUPTI keeps 2-3 in use under a tight launch
  // loop, and a pool that grows mid-run steps resident memory up by a whole buffer.
  size_t initial_buffers = 4;
  bool graph_level = false;  // mode="graph": one record per graph launch (see graphs.md)
  // Period of the background check that hands over partly filled buffers when launch tags pile
  // up (flush_policy.h; 0: only when buffers fill and at flush/finalize).
  uint32_t flush_interval_ms = 20;
  // Tags held before that check flushes (FlushPolicy::tag_limit; 0: flush at every check).
  uint64_t flush_tags = FlushPolicy{}.tag_limit;
  // Completed buffers are attributed on CUPTI's thread (or the flushing one). On: handed to a
  // worker thread of ours, so CUPTI's thread returns at once; measured on an H100 it did not
  // lower launch overhead beyond the host's noise and kept 1-2 more buffers in use (+2 MB RSS
  // over 100k replays of a graph captured before start), so it is off (PROTON_BUFFER_THREAD=1
  // turns it on).
  bool buffer_thread = false;
  // Which launch callbacks correlate kernels with their launch. Runtime launches also enter
  // the driver's launch callback, and since CUDA 13 with the runtime call's correlation id, so
  // there kDriver sees every launch with half the callbacks. kAuto: kDriver where CUPTI is 13
  // or newer, else kAll.
  enum class LaunchCallbacks : uint8_t { kAuto, kAll, kDriver };
  LaunchCallbacks launch_callbacks = LaunchCallbacks::kAuto;
  // Hardware counters (mode="counters", data/counter_config.h): per-launch values and PM samples
  // handed to RecordProcessor::deliver (LaunchCounterValues, CounterSampleBatch). A backend
  // without counters, or a GPU that refuses them, says so once and times kernels as usual.
  CounterConfig counters;
  // CUPTI's kernel records (kernel time, kernel boxes on the trace). Off: the launch callbacks
  // run without them, for instrumentation sessions that keep region cycles only (their launch
  // path then costs what Triton's own does; docs/instrumentation.md, "Wall time"), until a
  // session that times kernels asks for them (enable_kernel_records).
  bool kernel_records = true;
  // This rank's local rank (io/run_info.h, published by proton/_ranks.py for torchrun, Open MPI,
  // MPICH and Slurm), -1 when unknown: PM sampling's device when no context is current yet.
  int local_rank = -1;
  // NVTX push/pop ranges become scopes (PROTON_NVTX, triton.knobs.proton.enable_nvtx);
  // nvtx_debug prints each on stderr (PROTON_NVTX_DEBUG).
  bool nvtx = true;
  bool nvtx_debug = false;
  // Host calls that block (synchronizes, synchronous or pageable copies) timed from their API
  // callbacks and attributed to their call path (PROTON_HOST_CALLS=0 turns it off). Only those
  // calls enter the callback: a launch costs the same either way.
  bool host_calls = true;
  // The vendor library the user chose (PROTON_CUPTI_PATH, knobs.proton.cupti_lib_dir): a file or
  // a folder; empty: the backend's own search.
  std::string cupti_path;
  // mode="graph": enable graph tracing at start instead of at the first graph made after it
  // (PROTON_GRAPH_TRACE_EAGER, for comparisons).
  bool graph_trace_eager = false;
  // Detach the vendor library from the driver at stop (PROTON_CUPTI_FINALIZE; opt-in: it has
  // been seen to crash while other threads launch kernels).
  bool cupti_finalize = false;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  /// Subscribes callbacks and enables activity collection, delivering to `sink`.
  /// Returns false and sets `why` (one line a user can act on) when it cannot start.
  /// Must never throw or abort.
  virtual bool start(RecordProcessor* sink, const BackendOptions& options, std::string& why) = 0;

  /// Stops launch callbacks (all sessions inactive) without losing records in flight;
  /// resume() turns them back on. Cheap: no flush.
  virtual void pause() = 0;
  virtual void resume() = 0;

  /// Delivers every record of kernels that have completed so far; returns when done.
  virtual void flush() = 0;

  /// Flushes, disables everything, unsubscribes. start() may be called again afterwards.
  virtual void stop() = 0;

  /// Properties of device `id` (for the device map).
  virtual DeviceInfo device(uint32_t id) = 0;

  /// Now, on the clock of KernelRecord::start_ns/end_ns. Traces sample it next to the steady
  /// clock when they start to put GPU and CPU events on one time line. The default is for
  /// backends that already report steady-clock (CLOCK_MONOTONIC) timestamps.
  virtual uint64_t timestamp_ns() { return steady_ns(); }

  /// PC sampling (mode="pcsampling", docs/pc-sampling.md), on a started backend: samples go
  /// to the RecordProcessor given to start(). Returns false with `why` (one line naming the
  /// cause) when this backend or GPU cannot sample; kernel timing goes on either way.
  virtual bool start_pc_sampling(const PcSamplingOptions& options, std::string& why) {
    why = "the " + std::string(name()) + " backend has no PC sampling";
    return false;
  }
  virtual void stop_pc_sampling() {}
  /// Why hardware counters asked for at start() are not collected ("" when they are, or were
  /// not asked for). Set once by start(); the session layer reports it to the user.
  virtual std::string counters_problem() const { return {}; }
  /// True when that problem is the user's to fix (an unknown metric name, a set needing
  /// replay): the session layer then refuses the session instead of timing without counters.
  virtual bool counters_user_error() const { return false; }
  /// Turns kernel records on in a backend started without them (a session timing kernels
  /// joins instrumentation sessions that keep region cycles only). Returns false with `why`
  /// when the vendor library refuses.
  virtual bool enable_kernel_records(std::string& why) {
    (void)why;
    return true;
  }
  /// Turns them off again (the last session timing kernels ended, others run on): launches are
  /// no longer tagged, and every record of a tagged one is delivered before they go.
  virtual void disable_kernel_records() {}
};

/// Extra folders where backends look for vendor libraries (the Python package passes its
/// site-packages folders, where pip-installed CUDA wheels and Triton keep libcupti).
void set_library_search_paths(std::vector<std::string> dirs);

/// The names make_backend and proton.start(backend=...) take: "cupti" (NVIDIA kernel timing)
/// and "instrumentation" (Triton's intra-kernel regions, beside CUPTI's kernel timing).
std::span<const std::string_view> backend_names();

/// Creates the backend named `name` (one of backend_names(); "" picks this machine's) or nullptr
/// with `why` set when this build or machine has none.
std::unique_ptr<Backend> make_backend(std::string_view name, std::string& why);

}  // namespace proton
