// PC sampling with CUPTI at the hardware's own cost (mode="pcsampling", docs/pc-sampling.md).
//
// Continuous collection: each context is enabled and configured once (at start, or when it is
// created) with start/stop control off, so CUPTI samples every kernel with nothing done per
// launch: no start/stop, no synchronization anywhere on the launch path. Our own thread calls
// cuptiPCSamplingGetData every drain_ms, translates the records at the border
// (pc_sampling_records.h), maps PCs to lines (pc_sampling_lines.h) and hands the batch to the
// record processor, whose sessions attribute it (data/pc_attribution.h).
//
// Sizing: the period, the hardware buffer and CUPTI's worker sleep span are chosen together
// (choose_pc_sizes): the buffer must hold several sleep spans of samples at the chosen rate,
// or CUPTI drops them all (GetData returns CUPTI_ERROR_OUT_OF_MEMORY and/or sets
// hardwareBufferFull), and keeps answering so until sampling is disabled. So the period is
// raised at start until the buffer holds it (unless adapt=0). A fill that comes anyway is
// counted at the drain that sees it, reported in the profile and on stderr, and the next
// session of the process starts at a period the buffer holds (period_after_full). The running
// context is left alone: re-enabling it from the drain thread while the application launched
// hung the process on an H100.
// Enabling and configuring a context is pc_sampling_setup.h, shared with the bench floor.
//
// Threads and locks: start/stop/drain come from the backend (session layer's API lock). mu_
// guards the contexts and their buffers; the drain thread, resource callbacks (context
// created/destroyed, on application threads) and drain() take it. Lock order: mu_, then the
// record processor's lock. Module callbacks only touch PcLineMap (its own lock).
#pragma once

#include <cupti.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cupti/cupti_api.h"
#include "backends/cupti/pc_sampling_lines.h"
#include "backends/cupti/pc_sampling_records.h"
#include "backends/cupti/pc_sampling_setup.h"
#include "backends/cupti/pc_sampling_stats.h"
#include "backends/pc_sampling_options.h"

namespace proton {
class RecordProcessor;
}

namespace proton::cupti {

/// The period, hardware buffer and sleep span for `options` on a GPU with `sms` SMs; `note`
/// says what was changed to make them fit (empty when nothing was).
struct PcSizes {
  uint32_t period_log2 = 0;
  uint64_t buffer_bytes = 0;
  uint64_t scratch_bytes = 0;
  uint32_t sleep_span_ms = 0;
  std::string note;
};
PcSizes choose_pc_sizes(const PcSamplingOptions& options, uint32_t sms);

/// Hardware-buffer bytes that hold kSafety sleep spans of samples at 2^period_log2 cycles on
/// `sms` SMs (the rate model of choose_pc_sizes).
uint64_t pc_buffer_bytes_needed(uint32_t period_log2, uint32_t sleep_span_ms, uint32_t sms);

/// The period to sample at after `buffer_bytes` filled at 2^period_log2: one step up at least,
/// and up to the first period the rate model says the buffer holds (at most 31).
uint32_t period_after_full(uint32_t period_log2, uint64_t buffer_bytes, uint32_t sleep_span_ms,
                           uint32_t sms);

class PcSampler {
 public:
  static PcSampler& global();
  PcSampler();
  ~PcSampler();  // stops sampling if it runs
  PcSampler(const PcSampler&) = delete;
  PcSampler& operator=(const PcSampler&) = delete;

  /// Enables sampling on the calling thread's current context (others as they are created).
  /// Returns false with `why` (one line naming the cause) when sampling cannot run; kernel
  /// timing is not affected either way.
  bool start(const CuptiApi& api, const DriverApi& driver, RecordProcessor* sink,
             const PcSamplingOptions& options, uint32_t sms, std::string& why);
  /// Delivers every sample CUPTI has decoded so far (flush/finalize).
  void drain();
  /// Drains, disables sampling on every context, joins the thread.
  void stop();
  bool running() const { return running_.load(std::memory_order_acquire); }
  /// One round of the drain thread (enable new contexts, drain, deliver, re-enable after a full
  /// buffer), now: tests drive the sampler with it instead of waiting for the thread.
  void tick();

  /// Resource callbacks (context created/destroyed, module loaded), from the subscriber.
  void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept;

  PcSamplingStats stats() const;

 private:
  struct Context;
  bool enable(CUcontext ctx, std::string& why);                  // requires mu_
  void drain_locked(Context& c, bool final);                     // requires mu_
  void translate(Context& c, const CUpti_PCSamplingData& data);  // requires mu_
  void buffer_full_locked(Context& c, bool final);               // requires mu_
  void disable_locked(Context& c);                               // requires mu_
  void deliver();                                                // requires mu_
  void run();                                                    // the drain thread
  void tick_locked();                                            // requires mu_
  void enable_or_warn(CUcontext ctx);                            // requires mu_
  void enable_pending_locked();                                  // requires mu_
  NameId locate(uint64_t crc, NameId fn, const char* name, uint64_t pc);

  const CuptiApi* api_ = nullptr;
  const DriverApi* driver_ = nullptr;
  RecordProcessor* sink_ = nullptr;
  PcSamplingOptions options_;
  PcSizes sizes_;
  std::atomic<bool> running_{false};

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;                           // guarded by mu_
  std::vector<std::unique_ptr<Context>> contexts_;  // guarded by mu_
  std::shared_ptr<const PcStallTable> table_;       // guarded by mu_ (set by the first enable)
  std::vector<std::string> raw_reasons_;            // guarded by mu_
  PcSampleBatch batch_;                             // guarded by mu_: the drain's scratch
  PcSamplingStats stats_;                           // guarded by mu_
  bool warned_ = false;                             // guarded by mu_
  uint32_t sms_ = 0;
  uint64_t final_fills_ = 0;    // guarded by mu_: full buffers seen when disabling (too late)
  uint64_t sessions_done_ = 0;  // guarded by mu_: sessions of this process that have stopped
  // A full buffer seen in this process: the period the next session with this buffer and
  // span starts at (guarded by mu_).
  struct Learned {
    uint64_t buffer_bytes = 0;
    uint32_t sleep_span_ms = 0;
    uint32_t period_log2 = 0;
  } learned_;
  // Contexts created while the drain thread held mu_ (on_resource), enabled at its next tick.
  std::mutex pending_mu_;  // guards pending_contexts_ only; taken after mu_ or alone
  std::vector<CUcontext> pending_contexts_;
  std::thread thread_;
  PcLineMap lines_{PcSamplingOptions{}.binary_bytes};
};

/// Routes resource callbacks to the running sampler (a no-op when none runs).
void pc_sampling_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept;

/// Enables the resource callbacks PC sampling needs (contexts, modules) on `subscriber`.
bool set_pc_sampling_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                               std::string& error);

}  // namespace proton::cupti
