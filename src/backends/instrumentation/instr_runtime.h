// The runtime side of intra-kernel instrumentation: device pools, the per-launch hand-out, the
// asynchronous copy-back and the consumer thread that decodes and aggregates.
//
// Per launch (the launching thread: no lock, no host round trip, no driver call, no heap
// allocation in steady state):
//   alloc()        Triton's launcher asks for the launch's profile scratch: a compare-and-swap
//                  on the pool ring's head (slice_ring.h), remembered in a thread-local until
//                  the launch returns;
//   launch_exit()  writes the launch's record into the thread's own queue (launch_queue.h):
//                  from the CUPTI launch callback at the launch API's exit when kernel timing
//                  runs beside (no Python), else from Triton's launch-exit hook.
// The launching thread shares no lock and no line per launch with the consumer or decoder
// threads: it wakes the consumer (through the mutex) once per batch, and takes the mutex only
// on the rare paths (the first launch of a pool, a full ring or queue, a per-thread stream).
// The consumer takes the queued records as a batch: records one event per launch stream after
// the launches (they were submitted before their records were queued) and makes our copy
// stream wait for it, then copies back only what the warps wrote (compact_copy.h: headers
// first, then the written part of every segment, as strided copies over runs of contiguous
// slices) and gives the slices back to the ring. A decoder thread decodes the copied batch and
// adds region totals under each kernel's node while the consumer copies the next one (up to
// kCopies batches in flight); helpers take a share of a batch's launches while work waits
// (decoder_threads in all). When the ring is full a launch waits for the consumer up to
// `overflow_wait_ms`, then writes into a discard slice instead: counted as an overflow, never
// a crash.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/instrumentation/compact_copy.h"
#include "backends/instrumentation/device_api.h"
#include "backends/instrumentation/instr_options.h"
#include "backends/instrumentation/launch_queue.h"
#include "backends/instrumentation/scratch_decoder.h"
#include "backends/instrumentation/slice_ring.h"
#include "backends/instrumentation/staging_arena.h"
#include "common/ids.h"

namespace proton::instr {

struct ThreadSide;  // instr_runtime_parts.h

/// How to decode and name one compiled kernel's regions.
struct KernelInfo {
  NameId name = kNoName;
  KernelLayout layout;
  std::vector<NameId> scope_names;     // by scope id (kNoName: unknown id)
  std::vector<int32_t> scope_parents;  // by scope id (-1: top level)
  /// Warps each profiled unit stands for on the timeline: 1 (warp granularity), 2/4/8
  /// (warp_N), 4 (a warpgroup), 8/16/32 (warp_group_N), num_warps (cta). The unit's id is its
  /// first warp (the one that records). kWholeCta (data/region_metrics.h): one lane per CTA.
  uint32_t group_warps = 1;
};

struct InstrStats {
  uint64_t launches = 0;          // launches that got a slice of a pool
  uint64_t decoded = 0;           // launches decoded
  uint64_t overflows = 0;         // launches that got the discard slice (pool full)
  uint64_t largest_overflow = 0;  // the most bytes one of them asked for
  uint64_t paused = 0;            // launches while sessions were paused (discard slice)
  uint64_t unknown_kernels = 0;   // launches of kernels never registered (not decoded)
  uint64_t failed_launches = 0;   // launch calls that returned an error (nothing to decode)
  uint64_t copy_errors = 0;       // driver calls that failed (that launch's data is lost)
  uint64_t samples = 0;           // closed regions decoded
  uint64_t wrapped_units = 0;
  uint64_t overwritten_events = 0;
  uint64_t unmatched_events = 0;
  uint64_t corrupt_ctas = 0;
  uint64_t bytes_copied = 0;    // device-to-host bytes actually copied (written records only)
  uint64_t bytes_reserved = 0;  // profile-scratch bytes the launches were given
  uint64_t pool_bytes = 0;      // device bytes held by pools now
  uint64_t max_in_flight_bytes = 0;
  // Where the consumer's time goes (ns, summed): waiting for the copies, decoding, handing
  // regions to the sessions; and how long launches waited for a full pool.
  uint64_t batches = 0;
  uint64_t copy_wait_ns = 0;
  uint64_t decode_ns = 0;
  uint64_t deliver_ns = 0;
  uint64_t full_wait_ns = 0;
  // Launches that took the mutex to wake the consumer (it slept with nothing queued, or the
  // pool was three quarters full; it looks at the queues by itself while it gathers).
  uint64_t wakes = 0;
  uint64_t wake_ns = 0;         // what those launches spent on the mutex and the wake
  uint64_t deferred_wakes = 0;  // wakes left to a later launch: the mutex was held
  // Launches on another GPU context than their session's pool (another device): given a
  // buffer of their own device, their regions not kept (one device per process).
  uint64_t other_context_launches = 0;
  uint64_t decoder_held_bytes = 0;  // what the idle decoders keep of their results' capacity
  // Allocations that left the lock-free path (the first launch of a pool its session's start
  // could not allocate, a full ring, a paused or closing session) and their time in it, the mutex
  // and any full-pool wait included.
  uint64_t slow_allocs = 0;
  uint64_t slow_alloc_ns = 0;
  // Staging arenas pinned (at a session's first launch, then only a larger one for a batch that
  // did not fit alone), and the time the driver took to pin them.
  uint64_t staging_allocs = 0;
  uint64_t staging_alloc_ns = 0;
  // Slices handed out whose launch never reached its exit within a full pool's wait (their
  // thread stuck in between; a thread that ends gives its slice back itself), given up so that
  // the ring goes on.
  uint64_t abandoned_slices = 0;
  // CUDA graphs (graph_capture.cpp): launches captured into a graph, each given device memory
  // of its own for the graph's life (graph_bytes); replays of them copied into the ring and
  // decoded like launches (graph_replays); captured launches past the room set aside for them,
  // or seen without the launch callbacks that see replays, keep no regions (graph_dropped), nor
  // do replays once their sessions ended or launched into another capture (graph_unheard).
  uint64_t graph_launches = 0;
  uint64_t graph_bytes = 0;
  uint64_t graph_replays = 0;
  uint64_t graph_dropped = 0;
  uint64_t graph_unheard = 0;
  // Batches whose launch stream was being captured by the time the consumer ordered its copies
  // after them: it waited for the whole context instead of recording an event into the capture.
  uint64_t capture_syncs = 0;
};

/// Where decoded launches go (the session runtime; tests pass their own).
class RegionSink {
 public:
  virtual ~RegionSink() = default;
  virtual void deliver(uint64_t sessions, ContextId ctx, const KernelInfo& kernel,
                       const DecodeResult& decoded, uint32_t device_id, uint32_t clock_khz) = 0;
  /// Whether `sessions` need each region (a timeline); false: the decoder fills only the
  /// per-scope sums, 2-3x faster for launches of thousands of regions.
  virtual bool wants_samples(uint64_t sessions) const { return true; }
};

class InstrRuntime {
 public:
  static InstrRuntime& get();
  /// The options of the runtime made by the first get() (sizes, threads) and of pools opened
  /// with pool_bytes 0 from now on. The session layer calls it at every start, so the options
  /// of the first session reach the runtime it opens.
  static void configure(const InstrOptions& options);

  /// Tests: a fake device and sink. Call before open().
  void set_device_api(std::unique_ptr<DeviceApi> api);
  void set_sink(RegionSink* sink);

  /// Opens session `session`'s pool of `pool_bytes` (0: the configured size, 256 MB by default).
  /// Its device memory is allocated here when the calling thread has a GPU context and the process
  /// sees one GPU, else on the first launch, on the launching thread (its context); alloc()
  /// throws std::runtime_error when there is no driver.
  /// `deliver_mask`: the bit(s) of the session runtime's SessionMask that this session's regions
  /// go to (its slot, which is not its public id once ids grow past the slots); 0: bit `session`.
  void open(uint32_t session, uint64_t pool_bytes, uint64_t deliver_mask = 0);
  /// Drains every queued launch, then frees the session's pool.
  void close(uint32_t session);
  /// Waits until every launch queued so far is decoded and delivered.
  void drain();

  void register_kernel(uint64_t function, KernelInfo info);

  /// CUDA graphs (graph_capture.cpp). Whether any instrumented launch was captured into a graph
  /// in this process: until then graph launches cost the launch callbacks nothing more.
  static bool graphs_captured() { return s_graphs_captured.load(std::memory_order_relaxed); }
  /// CUPTI's graph callbacks: executable graph `exec` was instantiated from `graph`.
  void graph_instantiated(uint64_t graph, uint64_t exec);
  /// The launch callback, at a graph launch's exit on the launching thread: each captured
  /// launch of `exec` gets a slice of the ring, filled from its memory by a copy enqueued on
  /// `stream` after the replay, and is queued as an ordinary launch at
  /// `place(replay, capture site)`, the context a kernel record of the replay goes to (null:
  /// the capture site).
  using ReplayPlace = ContextId (*)(ContextId replay, ContextId capture);
  void graph_launched(uint64_t exec, uint64_t stream, ContextId replay = 0,
                      ReplayPlace place = nullptr);
  /// CUPTI's graph callbacks: `graph` / executable graph `exec` is being destroyed (a new one
  /// may get its handle).
  void graph_destroyed(uint64_t graph);
  void graph_exec_destroyed(uint64_t exec);

  /// Triton's profile allocator: a device address for `bytes` (aligned to `alignment`).
  uint64_t alloc(uint64_t bytes, uint64_t alignment, uint64_t stream);
  /// Triton's launch-exit hook: queues the copy-back of the slice this thread was given.
  /// `launched` false: the launch call failed, so its slice holds nothing of this launch (maybe
  /// an older launch's records): it is given back without a copy and counted, never decoded.
  void launch_exit(uint64_t function, uint64_t stream, ContextId ctx, uint64_t sessions,
                   bool launched = true);
  /// The stream handle CUDA resolves per thread (CU_STREAM_PER_THREAD): the consumer cannot
  /// record on it for the launching thread, so that thread records an event itself.
  static constexpr uint64_t kPerThreadStream = 0x2;
  /// Jobs one batch takes at most (bounds what a batch stages).
  static constexpr size_t kMaxBatch = 256;
  /// The consumer gathers launches for up to gather_ms (or wake_batch of them, or until the pool
  /// is half full, which it looks at every kGatherLookUs) before it copies: launches wake it
  /// only when it sleeps with nothing queued or the pool is three quarters full (a wake is a
  /// futex call on the launching thread), and the consumer's driver calls (event record,
  /// waits, copies) come once per batch. Defaults kGatherMs and kWakeBatch; InstrOptions
  /// (PROTON_INSTR_GATHER_MS, PROTON_INSTR_WAKE_BATCH, at most kMaxBatch) change them.
  static constexpr size_t kWakeBatch = 256;
  static constexpr int kGatherMs = 3;

  /// True: launch_exit() comes from the CUPTI launch callback (the allocator flags the launch
  /// on the thread's hot line), and launches while the callbacks are off (paused sessions) get
  /// the discard slice. False: from Triton's launch-exit hook.
  void set_exit_via_callback(bool on) { exit_via_callback_.store(on, std::memory_order_relaxed); }

  InstrStats stats();
  std::vector<std::string> errors();  // first few decode errors, for the user
  /// Tests: holds the runtime's mutex as a decoder or the consumer does (launches must not
  /// wait for it).
  std::unique_lock<std::mutex> hold_mutex_for_test() { return std::unique_lock(mu_); }
  uint32_t overflow_wait_ms = 1000;
  /// Device memory captured launches may hold in all, 0: the size of a session's pool
  /// (PROTON_INSTR_POOL_MB, 256 MB by default). Past it, captured launches keep no regions
  /// (counted in graph_dropped).
  uint64_t graph_room_bytes = 0;
  /// The staging arena's size (InstrOptions::staging_bytes, default kStagingMb), pinned with the
  /// first pool (tests set it right after set_device_api()).
  static constexpr size_t kStagingMb = 32;
  size_t staging_first_bytes;
  /// A slice handed out whose launch has not reached its exit for this long, found holding a
  /// full pool's tail, is given up (its thread is stuck in between; counted in
  /// abandoned_slices). Its launch, should it come after all, is dropped.
  uint32_t abandon_after_ms = 2000;
  /// Decoder threads (InstrOptions::decoders, default half the CPUs,
  /// kMinDecoders..kMaxDecoders):
  /// the first decodes every batch, the others only while work waits (see decode_batches).
  static constexpr size_t kMinDecoders = 3;
  static constexpr size_t kMaxDecoders = 8;
  const size_t decoder_threads;
  /// A decoder's reused result (its regions' capacity) is given back when the decoder has had
  /// no work for kIdleTrimMs holding more than kKeptDecodeBytes
  /// (stats()["decoder_held_bytes"]).
  static constexpr size_t kKeptDecodeBytes = 256 << 10;
  static constexpr int kIdleTrimMs = 100;
  /// Helper i joins while more than i untouched batches wait, or more than i x helper_bytes of
  /// copied records wait undecoded (a launch of a region per GEMM step copies ~1 MB: one batch
  /// of such launches is split among the helpers, job by job).
  uint64_t helper_bytes = uint64_t{2} << 20;

 private:
  struct Pool;
  struct Job;
  struct Copied;
  InstrRuntime();
  explicit InstrRuntime(const InstrOptions& options);
  ~InstrRuntime();
  bool ensure_device(std::string& why);  // requires mu_
  // The pool's device memory (and the first staging); `at_launch` false at the session's start,
  // where a thread without a GPU context is no error (its first launch tries again).
  bool ensure_pool(Pool& pool, bool at_launch = true);  // requires mu_
  // The launch side's paths that take mu_: the first launch of a pool, a full ring (waits for
  // the consumer), a paused session or none (the discard slice).
  uint64_t alloc_slow(uint64_t bytes, uint64_t alignment, uint64_t stream, bool paused,
                      bool via_callback);
  uint64_t discard_slice(uint64_t need, bool paused);  // requires mu_
  // The calling thread's GPU context when it is known and not `pool`'s, else 0 (at once, with
  // no driver call, for a pool of a process that sees one GPU: ensure_pool).
  uint64_t other_context(const Pool& pool) const;
  // A launch whose thread has another GPU context current than the pool's: a scratch buffer
  // of that context (its device), kept per context; its records are not kept (counted).
  uint64_t other_context_slice(uint64_t need, uint64_t ctx);  // requires mu_
  // Requires mu_: the discard buffer of GPU context `ctx` (0: unknown), grown to `need`, handed
  // to this thread's launch (`capture`: the device API takes the calling thread's context).
  uint64_t discard_buffer(uint64_t need, uint64_t ctx, bool capture);
  uint64_t hand_out(Pool& pool, const SliceRing::Slice& slice, uint64_t bytes, bool via_callback);
  void choose_active_pool();    // requires mu_
  Pool* lowest_open_pool();     // requires mu_: the pool launches draw from (null: none)
  LaunchQueue& thread_queue();  // the calling thread's queue, registered at its first launch
  friend struct ThreadSide;
  static void give_back_unlaunched(ThreadSide& t);  // a slice no kernel wrote
  void consume();
  void decode_batches(size_t index);        // decoder thread `index` (0: the first)
  bool may_decode(size_t index) const;      // requires mu_: decoder `index` has a job to take
  void batch_decoded(Copied& c);            // requires mu_: its last job is done
  bool pool_short() const;                  // requires mu_: some pool is over half in flight
  uint64_t records_waiting() const;         // requires mu_: records no batch has taken yet
  void copy_back(Copied& c, void* copied);  // consumer thread
  void order_after_launches(std::deque<std::unique_ptr<Job>>& batch, const char*& failed);
  void plan_runs(Copied& c);
  // Pinned staging (staging_arena.h): `bytes` of the arena for batch `c` (consumer thread,
  // without mu_), waiting while other batches hold the room; nullptr if pinning failed.
  uint8_t* take_staging(Copied& c, size_t bytes);
  void give_staging(Copied& c);  // requires mu_: the batch is decoded
  // Requires mu_: `fresh` (pinned since `pinning_since_ns`; nullptr: pinning failed, counted
  // all the same) becomes the arena, the old one retired. False when `fresh` is nullptr.
  bool replace_arena(uint8_t* fresh, size_t bytes, uint64_t pinning_since_ns);
  StagingArena arena_;                 // guarded by mu_
  std::vector<void*> retired_pinned_;  // outgrown arenas, freed when no session runs
  // What a chunk's decodes add to stats_ (and errors_), added once per chunk of launches.
  struct DecodeCounts {
    uint64_t decoded = 0, samples = 0, wrapped_units = 0, overwritten_events = 0;
    uint64_t unmatched_events = 0, corrupt_ctas = 0, copy_errors = 0, unknown_kernels = 0;
    std::vector<std::string> errors;
  };
  static void count_decoded(const DecodeResult& r, DecodeCounts& counts);
  void add_counts(DecodeCounts& counts);  // requires mu_
  uint64_t capture_syncs_ = 0;            // consumer thread: added to stats_ after each batch
  static std::atomic<bool> s_graphs_captured;
  // Decodes and delivers to `sink` (decoder thread, without mu_); returns the ns delivering.
  // `into`: the decoder thread's one result, reused for every launch.
  uint64_t finish(Job& job, const Copied& c, RegionSink* sink, DecodeCounts& counts,
                  DecodeResult& into);
  // CUDA-graph capture (graph_capture.cpp). A launch on a capturing stream gets device memory
  // of its own, kept for the process's life (the graph may replay after every session ended);
  // each replay's records are copied into the ring right after the replay, on its stream, and
  // go down the usual path. The ring is never handed to a graph.
  struct Captured;
  uint64_t alloc_captured(uint64_t need, bool paused, bool via_callback);  // requires mu_
  void captured_exit(Captured& c, uint64_t function, uint64_t stream, ContextId ctx,
                     uint64_t sessions, bool launched);
  bool capturing(uint64_t stream);  // requires mu_, api_ loaded
  // Requires mu_: a captured launch whose replays keep no regions, counted, `why` said once.
  void drop_captured(const char* why);
  std::vector<std::unique_ptr<Captured>> captured_;  // mu_; never freed (graphs may replay)
  std::atomic<DeviceApi*> capture_api_{nullptr};     // api_ once loaded, for the allocator's check
  // The captured launches of each graph and of each executable graph made from one (CUPTI's
  // graph callbacks tell which), in capture order. graphs_mu_ guards both; never held across
  // a driver call.
  std::mutex graphs_mu_;
  std::map<uint64_t, std::vector<Captured*>> graph_launches_;
  std::map<uint64_t, std::vector<Captured*>> exec_launches_;
  std::atomic<uint64_t> replays_unheard_{0};
  std::atomic<uint64_t> replays_copied_{0};
  // A replay's slice: the alignment Triton asks profile scratch for.
  static constexpr uint64_t kGraphCopyAlignment = 128;
  void* take_event();                       // requires mu_
  void note_copy_error(const char* stage);  // requires mu_

  std::mutex mu_;  // guards everything below but the atomics; never held across a decode
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // One per decoder thread: a batch wakes the first decoder and only the helpers it is work for
  // (may_decode), not every helper at every batch.
  std::unique_ptr<std::condition_variable[]> decode_cvs_;
  std::condition_variable copied_cv_;  // a Copied came back to free_copied_
  std::unique_ptr<DeviceApi> api_;
  bool api_loaded_ = false;
  // The process sees one GPU (asked once, when api_ loads): every launch runs on the pool's
  // device, so the pool is allocated at the session's start and no launch asks its context.
  bool one_gpu_ = true;
  uint64_t api_generation_ = 0;  // bumped when api_ changes; read by the consumer after a batch
  std::string api_why_;
  RegionSink* sink_ = nullptr;
  void* copy_stream_ = nullptr;
  std::map<uint32_t, std::unique_ptr<Pool>> pools_;
  // The pool launches reserve in without mu_: the lowest open session's, once its device
  // memory exists (null: none; launches then take alloc_slow).
  std::atomic<Pool*> active_{nullptr};
  std::atomic<uint64_t> open_mask_{0};  // the open pools' deliver bits
  // Pools closed while a launch still held a slice of them: kept (with their device memory,
  // which that kernel may still write) rather than freed under it.
  std::vector<std::unique_ptr<Pool>> retired_;
  std::map<uint64_t, std::shared_ptr<const KernelInfo>> kernels_;
  std::vector<std::shared_ptr<LaunchQueue>> queues_;  // every launching thread's
  std::vector<void*> free_events_;
  void* batch_event_ = nullptr;  // the consumer's event after each batch's copies
  std::vector<std::unique_ptr<Job>> free_jobs_;
  // Decoders take a batch's jobs in chunks of about kChunkBytes of copied records (a launch of
  // a region per step of a GEMM tile loop is ~65,000 regions: one thread decodes it ten times
  // slower than the GPU runs it). The program's CPUs are shared only when decoding falls behind.
  static constexpr uint64_t kChunkBytes = 512 << 10;
  // Copied batches: the consumer copies one while the decoders decode others (kCopies in all,
  // made on demand), so copy-back and decoding overlap and neither waits for the other.
  static constexpr size_t kCopies = 5;
  std::vector<std::unique_ptr<Copied>> free_copied_;
  std::deque<std::unique_ptr<Copied>> decode_queue_;  // batches with jobs no decoder took yet
  std::vector<std::unique_ptr<Copied>> decoding_;     // every job taken, some still decoding
  uint64_t unclaimed_bytes_ = 0;                      // copied records no decoder took yet
  size_t copies_made_ = 0;
  std::vector<std::thread> decoders_;
  // Consumer thread only: one event per launch stream of the batch.
  std::vector<void*> stream_events_;
  std::vector<uint64_t> batch_streams_;
  std::atomic<bool> exit_via_callback_{false};
  const int gather_ms_;               // InstrOptions::gather_ms, fixed when made
  const size_t wake_batch_;           // InstrOptions::wake_batch, fixed when made
  std::vector<size_t> decoder_held_;  // mu_: held_bytes of each decoder's result when it idled
  // Buffers for launches whose records are not kept (a full pool, a paused session, another
  // device): one per GPU context, so that a kernel always writes its own device's memory.
  struct ContextDiscard {
    uint64_t ctx = 0, device = 0, bytes = 0;
  };
  std::vector<ContextDiscard> discards_;
  std::vector<uint64_t> old_discards_;  // outgrown, freed at exit: a kernel may still write them
  // Threads waiting for the consumer now (drain, a full pool or queue): it takes what is
  // queued at once instead of gathering a batch.
  uint32_t urgent_ = 0;
  // A launch woke the consumer since it last looked for records (set by launches without mu_,
  // cleared by the consumer under it): launches wake it once per batch, not once each.
  std::atomic<bool> signalled_{false};
  // The consumer sleeps with nothing queued (no timeout): only then does a launch's first
  // record wake it. While it copies or gathers it looks at the queues by itself, so a launch
  // never takes mu_ then (it did once per batch, right as the consumer took the batch under
  // mu_, and blocked on it).
  std::atomic<bool> idle_{false};
  // Launches that found mu_ held when they would have woken the consumer (stats()).
  std::atomic<uint64_t> deferred_wakes_{0};
  static constexpr int kIdleLookMs = 20;     // the idle consumer's look without a wake
  static constexpr int kGatherLookUs = 200;  // the gathering consumer's look at the queues
  std::thread consumer_;
  bool stop_ = false;
  InstrStats stats_;
  std::vector<std::string> errors_;
  std::vector<std::string> copy_error_lines_;  // the first few copy errors, with the driver's
  bool said_copy_error_ = false;  // the first copy error is said on stderr, once per process
};

}  // namespace proton::instr
