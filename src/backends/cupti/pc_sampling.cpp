#include "backends/cupti/pc_sampling.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "attribution/record_processor.h"
#include "backends/cupti/cupti_errors.h"
#include "common/clock.h"
#include "common/name_table.h"
#include "common/thread_name.h"

namespace proton::cupti {

namespace {

// PC records one GetData call can return. A drain loops while CUPTI says more remain, so this
// only bounds one call; distinct PCs per 20 ms drain are a few thousand at most.
constexpr size_t kPcsPerCall = 4096;
// CUPTI's scratch buffer holds decoded records between two GetData calls.
constexpr uint64_t kScratchBytes = uint64_t{8} << 20;
// The default period: 2^16 cycles. Measured on an H100 (132 SMs): a 2 MB buffer held 2^17 at
// CUPTI's 100 ms span, while 2-8 MB at 2^14 overflowed.
constexpr uint32_t kDefaultPeriod = 16;
// Hardware buffer bytes one sleep span of 100 ms needs at 2^17 on 132 SMs, from the same
// measurement (2 MB was enough; a quarter of 8 MB at 2^14 was not): the rate scales with
// 2^-period and the SM count.
constexpr double kBytesPer100msAt17 = 2.0 * (1 << 20);
// The buffer holds this many sleep spans: CUPTI's worker may be late, kernels bursty. 4 was
// not enough: an MLP training loop (back-to-back cuBLAS GEMMs, ~3.5M samples/s at 2^16 on an
// H100) filled the 4 MB buffer this gave in 1 of 3 rounds, in two sessions; 8 MB costs 4 MB of
// host memory more.
constexpr double kSafety = 8.0;
constexpr uint64_t kMinBuffer = uint64_t{2} << 20;

std::atomic<PcSampler*> g_active{nullptr};

uint64_t round_up_pow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

}  // namespace

uint64_t pc_buffer_bytes_needed(uint32_t period_log2, uint32_t sleep_span_ms, uint32_t sms) {
  double sm_scale = sms == 0 ? 1.0 : sms / 132.0;
  double rate = kBytesPer100msAt17 * std::ldexp(1.0, 17 - static_cast<int>(period_log2)) * sm_scale;
  return static_cast<uint64_t>(rate * (sleep_span_ms / 100.0) * kSafety);
}

uint32_t period_after_full(uint32_t period_log2, uint64_t buffer_bytes, uint32_t sleep_span_ms,
                           uint32_t sms) {
  uint32_t p = std::min<uint32_t>(31, period_log2 + 1);
  while (p < 31 && pc_buffer_bytes_needed(p, sleep_span_ms, sms) > buffer_bytes)
    ++p;
  return p;
}

PcSizes choose_pc_sizes(const PcSamplingOptions& o, uint32_t sms) {
  PcSizes s;
  s.sleep_span_ms = std::max<uint32_t>(1, o.sleep_span_ms);
  s.period_log2 = o.period_log2 == 0 ? kDefaultPeriod : std::clamp<uint32_t>(o.period_log2, 5, 31);
  s.scratch_bytes = kScratchBytes;
  auto need = [&](uint32_t period) { return pc_buffer_bytes_needed(period, s.sleep_span_ms, sms); };
  uint32_t asked = s.period_log2;
  if (o.buffer_bytes != 0) {
    // The user's buffer: their period stands if the buffer holds it, or if they said adapt=0
    // (a full buffer is then counted and reported, and loses the rest of the session).
    s.buffer_bytes = o.buffer_bytes;
    while (o.adapt && s.period_log2 < 31 && need(s.period_log2) > s.buffer_bytes)
      ++s.period_log2;
  } else {
    while (s.period_log2 < 31 && need(s.period_log2) > o.max_buffer_bytes)
      ++s.period_log2;
    s.buffer_bytes = std::clamp(round_up_pow2(need(s.period_log2)), kMinBuffer, o.max_buffer_bytes);
  }
  if (s.period_log2 != asked) {
    s.note = "sampling period raised from 2^" + std::to_string(asked) + " to 2^" +
             std::to_string(s.period_log2) + " cycles so that a " +
             std::to_string(s.buffer_bytes >> 10) + " KB hardware buffer holds " +
             std::to_string(static_cast<int>(kSafety)) + " of CUPTI's " +
             std::to_string(s.sleep_span_ms) + " ms decode spans (a full buffer loses every " +
             "sample after it; pcsampling:buffer_mb=N chooses a larger buffer, adapt=0 keeps " +
             "the period)";
  }
  return s;
}

struct PcSampler::Context {
  CUcontext ctx = nullptr;
  uint32_t period_log2 = 0;
  bool full = false;  // its hardware buffer filled (CUPTI says so until disable)
  StallIndex index{{}};
  size_t reasons = 0;
  PcDataBuffer get;         // GetData's
  PcDataBuffer at_disable;  // CUPTI's SAMPLING_DATA_BUFFER: filled at disable
};

PcSampler::PcSampler() = default;

PcSampler::~PcSampler() {
  stop();
}

PcSampler& PcSampler::global() {
  static PcSampler* s = new PcSampler();  // leaked: resource callbacks may come during exit
  return *s;
}

bool PcSampler::start(const CuptiApi& api, const DriverApi& driver, RecordProcessor* sink,
                      const PcSamplingOptions& options, uint32_t sms, std::string& why) {
  if (running()) return true;
  if (api.cuptiPCSamplingEnable == nullptr || api.cuptiPCSamplingGetData == nullptr ||
      api.cuptiPCSamplingSetConfigurationAttribute == nullptr ||
      api.cuptiPCSamplingGetStallReasons == nullptr ||
      api.cuptiPCSamplingGetNumStallReasons == nullptr || api.cuptiPCSamplingDisable == nullptr) {
    why = api.path + " has no PC sampling API (CUDA 11.3 or newer is needed)";
    return false;
  }
  api_ = &api;
  driver_ = &driver;
  sink_ = sink;
  options_ = options;
  sizes_ = choose_pc_sizes(options, sms);
  sms_ = sms;
  {
    // An earlier session of this process filled a buffer of this size: start where it said.
    std::lock_guard lock(mu_);
    if (options.adapt && learned_.buffer_bytes == sizes_.buffer_bytes &&
        learned_.sleep_span_ms == sizes_.sleep_span_ms &&
        learned_.period_log2 > sizes_.period_log2) {
      sizes_.note = "sampling period raised from 2^" + std::to_string(sizes_.period_log2) +
                    " to 2^" + std::to_string(learned_.period_log2) +
                    " cycles: the hardware buffer filled at the lower rate earlier in this process";
      sizes_.period_log2 = learned_.period_log2;
    }
  }
  // lines_ keeps its binaries across start/finalize cycles: modules loaded earlier stay
  // loaded, and their load callbacks will not come again.
  if (api.cuptiGetSassToSourceCorrelation != nullptr) {
    const CuptiApi* a = api_;
    lines_.set_correlate([a](const void* cubin, size_t size, const char* fn, uint64_t pc,
                             PcLineMap::SourceLine& out) {
      CUpti_GetSassToSourceCorrelationParams p{};
      p.size = CUpti_GetSassToSourceCorrelationParamsSize;
      p.cubin = cubin;
      p.cubinSize = size;
      p.functionName = fn;
      p.pcOffset = pc;
      if (a->cuptiGetSassToSourceCorrelation(&p) != CUPTI_SUCCESS) return false;
      out.line = p.lineNumber;
      // CUPTI allocates both strings for the caller to free.
      if (p.fileName != nullptr) out.file = p.fileName;
      if (p.dirName != nullptr) out.dir = p.dirName;
      std::free(p.fileName);
      std::free(p.dirName);
      return true;
    });
  }
  if (api.cuptiGetCubinCrc != nullptr) {
    // Triton's cache: kernels compiled (and loaded) before start still get their lines.
    std::vector<std::string> dirs;
    const char* cache = std::getenv("TRITON_CACHE_DIR");
    const char* home = std::getenv("HOME");
    if (cache != nullptr && *cache != 0) {
      dirs.emplace_back(cache);
    } else if (home != nullptr && *home != 0) {
      dirs.push_back(std::string(home) + "/.triton/cache");
    }
    const CuptiApi* a = api_;
    lines_.set_binary_folders(std::move(dirs), [a](const void* data, size_t size, uint64_t& crc) {
      CUpti_GetCubinCrcParams cp{};
      cp.size = CUpti_GetCubinCrcParamsSize;
      cp.cubin = data;
      cp.cubinSize = size;
      if (a->cuptiGetCubinCrc(&cp) != CUPTI_SUCCESS) return false;
      crc = cp.cubinCrc;
      return true;
    });
  }
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
    warned_ = false;
    final_fills_ = 0;
    stats_ = PcSamplingStats{};
    stats_.period_log2 = stats_.start_period_log2 = sizes_.period_log2;
    stats_.asked_period_log2 = options.period_log2;
    stats_.buffer_bytes = sizes_.buffer_bytes;
    stats_.scratch_bytes = sizes_.scratch_bytes;
    stats_.sleep_span_ms = sizes_.sleep_span_ms;
    contexts_.clear();
    table_.reset();
    g_active.store(this, std::memory_order_release);
    // The current context now; later ones through CONTEXT_CREATED. With none current (CUDA
    // not initialised yet), the first context created is sampled from its creation on.
    CUcontext ctx = nullptr;
    if (driver_->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr && !enable(ctx, why)) {
      g_active.store(nullptr, std::memory_order_release);
      stats_.error = why;
      return false;
    }
  }
  if (!sizes_.note.empty()) std::fprintf(stderr, "proton: PC sampling: %s\n", sizes_.note.c_str());
  running_.store(true, std::memory_order_release);
  thread_ = std::thread([this] {
    name_this_thread("proton-pcsample");
    run();
  });
  return true;
}

bool PcSampler::enable(CUcontext ctx, std::string& why) {
  for (auto& c : contexts_) {
    if (c->ctx == ctx) return true;
  }
  auto c = std::make_unique<Context>();
  c->ctx = ctx;
  c->period_log2 = sizes_.period_log2;
  PcContinuousSettings settings{sizes_.period_log2, sizes_.buffer_bytes, sizes_.scratch_bytes,
                                sizes_.sleep_span_ms};
  PcStallReasons reasons;
  uint64_t t0 = steady_ns();
  if (!enable_continuous_pc_sampling(*api_, ctx, settings, kPcsPerCall, c->at_disable, reasons,
                                     why)) {
    return false;
  }
  stats_.enable_ms += (steady_ns() - t0) / 1e6;
  size_t n = reasons.names.size();
  if (!table_) {
    raw_reasons_ = reasons.names;
    table_ = std::make_shared<const PcStallTable>(PcStallTable::from_names(reasons.names));
    stats_.stall_reasons = static_cast<uint32_t>(n);
  }
  // Our table is the first context's; another GPU's reasons map by name. StallIndex maps
  // CUPTI's hardware index -> our position: build it from each position's hardware index.
  std::vector<uint32_t> hw(raw_reasons_.size(), 1u << 20);  // past the index cap: unknown
  for (size_t i = 0; i < n; ++i) {
    auto it = std::find(raw_reasons_.begin(), raw_reasons_.end(), reasons.names[i]);
    if (it != raw_reasons_.end()) hw[it - raw_reasons_.begin()] = reasons.indices[i];
  }
  c->index = StallIndex(hw);
  c->reasons = n;
  c->get.init(kPcsPerCall, n);
  contexts_.push_back(std::move(c));
  stats_.contexts = contexts_.size();
  return true;
}

NameId PcSampler::locate(uint64_t crc, NameId fn, const char* name, uint64_t pc) {
  return lines_.locate(crc, fn, name, pc);
}

void PcSampler::translate(Context& c, const CUpti_PCSamplingData& data) {
  PcDecodeLimits limits{kPcsPerCall, c.reasons};
  auto intern = [](const char* s) { return NameTable::global().intern(s); };
  auto loc = [this](uint64_t crc, NameId fn, const char* name, uint64_t pc) {
    return locate(crc, fn, name, pc);
  };
  batch_.dropped_samples += data.droppedSamples;
  batch_.non_user_samples += data.nonUsrKernelsTotalSamples;
  stats_.dropped += data.droppedSamples;
  stats_.non_user += data.nonUsrKernelsTotalSamples;
  stats_.samples += data.totalSamples;
  PcDecodeStats d = translate_pc_data(data, limits, c.index, 0, intern, loc, batch_);
  stats_.pc_records += d.records;
  stats_.bad_records += d.bad_records;
}

void PcSampler::drain_locked(Context& c, bool final) {
  // Each call returns what CUPTI's worker decoded so far; loop while it says more remain.
  for (int round = 0; round < 256; ++round) {
    c.get.reset();
    CUpti_PCSamplingGetDataParams gp{};
    gp.size = CUpti_PCSamplingGetDataParamsSize;
    gp.ctx = c.ctx;
    gp.pcSamplingData = &c.get.data;
    ++stats_.get_data_calls;
    CUptiResult r = api_->cuptiPCSamplingGetData(&gp);
    PcGetDataOutcome outcome = classify_get_data(r, c.get.data);
    if (outcome == PcGetDataOutcome::kFailed) {
      ++stats_.get_data_errors;
      break;
    }
    if (r == CUPTI_SUCCESS) translate(c, c.get.data);
    if (outcome == PcGetDataOutcome::kBufferFull) {
      buffer_full_locked(c, final);
      break;
    }
    if (c.get.data.remainingNumPcs == 0 || c.get.data.totalNumPcs == 0) break;
  }
}

void PcSampler::buffer_full_locked(Context& c, bool final) {
  // CUPTI dropped what the hardware buffer held, and (measured on an H100, CUDA 13) answers
  // CUPTI_ERROR_OUT_OF_MEMORY at every GetData until sampling is disabled: one fill, counted
  // once, and no sample of this context until the session ends.
  if (c.full) return;
  c.full = true;
  ++batch_.buffer_full;
  ++stats_.buffer_full;
  if (final) ++final_fills_;
  // Nothing is changed on the running context. A period set on it is accepted and changes
  // nothing (measured), and disabling and enabling it again from the drain thread while the
  // application launched kernels hung the GPU test that exercised it (H100, CUDA 13). So the
  // next session of this process starts at a period this buffer holds (start()), and the
  // user is told now.
  uint32_t next = 0;
  if (options_.adapt) {
    next = period_after_full(c.period_log2, sizes_.buffer_bytes, sizes_.sleep_span_ms, sms_);
    learned_ = {sizes_.buffer_bytes, sizes_.sleep_span_ms, std::max(learned_.period_log2, next)};
    stats_.next_period_log2 = learned_.period_log2;
  }
  if (!final) {
    std::string then =
        next == 0 ? std::string(" (adapt=0)")
                  : "; the next session samples every 2^" + std::to_string(next) + " cycles";
    std::fprintf(stderr,
                 "proton: PC sampling: the hardware buffer (%llu KB) filled at 2^%u cycles: CUPTI "
                 "drops every sample of this context until the session ends (counted on the "
                 "profile's root as pc_sampling_buffer_full)%s; a larger pcsampling:buffer_mb=N "
                 "or interval=N avoids it\n",
                 static_cast<unsigned long long>(sizes_.buffer_bytes >> 10), c.period_log2,
                 then.c_str());
  }
}

void PcSampler::enable_or_warn(CUcontext ctx) {
  std::string why;
  if (!enable(ctx, why) && !warned_) {
    warned_ = true;
    stats_.error = why;
    std::fprintf(stderr,
                 "proton: PC sampling is off for a new CUDA context: %s; kernel timing goes on\n",
                 why.c_str());
  }
}

void PcSampler::enable_pending_locked() {
  std::vector<CUcontext> pending;
  {
    std::lock_guard lock(pending_mu_);
    pending.swap(pending_contexts_);
  }
  for (CUcontext ctx : pending)
    enable_or_warn(ctx);
}

void PcSampler::disable_locked(Context& c) {
  drain_locked(c, true);
  c.at_disable.reset();
  uint64_t t0 = steady_ns();
  CUptiResult r = disable_pc_sampling(*api_, c.ctx);
  stats_.disable_ms += (steady_ns() - t0) / 1e6;
  if (r != CUPTI_SUCCESS) return;
  // What CUPTI still held went into SAMPLING_DATA_BUFFER at disable.
  translate(c, c.at_disable.data);
  if (c.at_disable.data.hardwareBufferFull) buffer_full_locked(c, true);
}

void PcSampler::deliver() {
  // Library-kernel samples alone (cuBLAS: no PCs, only a total) still count on the root.
  if (batch_.samples.empty() && batch_.buffer_full == 0 && batch_.dropped_samples == 0 &&
      batch_.non_user_samples == 0) {
    return;
  }
  batch_.reasons = table_;
  if (sink_ != nullptr && table_) {
    try {
      sink_->deliver(PcSamples{batch_});
    } catch (...) {
      // Out of memory while aggregating: this drain is lost, sampling goes on.
    }
  }
  batch_.clear();
}

void PcSampler::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::milliseconds(options_.drain_ms));
    if (stopping_) break;
    tick_locked();
  }
}

void PcSampler::tick() {
  std::lock_guard lock(mu_);
  tick_locked();
}

void PcSampler::tick_locked() {
  uint64_t t0 = steady_ns();
  enable_pending_locked();
  for (auto& c : contexts_)
    drain_locked(*c, false);
  deliver();
  ++stats_.drains;
  stats_.drain_ms_total += (steady_ns() - t0) / 1e6;
}

void PcSampler::drain() {
  if (!running()) return;
  // CUPTI's worker decodes the hardware buffer every sleep span: wait one out so that what
  // ran before this flush has been decoded.
  std::this_thread::sleep_for(std::chrono::milliseconds(sizes_.sleep_span_ms + 2));
  std::lock_guard lock(mu_);
  for (auto& c : contexts_)
    drain_locked(*c, false);
  deliver();
}

void PcSampler::stop() {
  if (!running()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  g_active.store(nullptr, std::memory_order_release);
  for (auto& c : contexts_) {
    disable_locked(*c);
  }
  deliver();
  contexts_.clear();
  if (stats_.buffer_full > 0) {
    // A fill first seen by the last drain (at finalize) leaves no later interval to sample
    // less often: say so, so that an unchanged period is not read as a failed adaptation.
    std::fprintf(stderr,
                 "proton: PC sampling: the hardware buffer filled %llu time(s) at 2^%u cycles "
                 "and CUPTI dropped the samples from then on (counted on the profile's root as "
                 "pc_sampling_buffer_full); %llu of the fills were seen at the end of the "
                 "session\n",
                 static_cast<unsigned long long>(stats_.buffer_full), stats_.period_log2,
                 static_cast<unsigned long long>(final_fills_));
  }
  if (sessions_done_ > 0 && stats_.samples > 0 && stats_.pc_records == 0 &&
      stats_.non_user == stats_.samples) {
    // Measured on an H100 (CUDA 13), for the minimal client too: after a context was disabled
    // and kernels ran before it was enabled again, CUPTI gives no PC records, only its non-user
    // total. Never silent: the samples are on the root as pc_samples_non_user, and this says why.
    stats_.all_non_user_after_earlier = true;
    std::fprintf(stderr,
                 "proton: PC sampling: CUPTI returned all %llu samples of this session as "
                 "non-user kernels (no PC records, so no source lines; counted on the profile's "
                 "root as pc_samples_non_user). CUDA 13's CUPTI does this to a context that an "
                 "earlier PC-sampling session of this process sampled when kernels ran between "
                 "the two: sample in the process's first session, or one session around "
                 "everything (docs/pc-sampling.md, \"Several sessions\")\n",
                 static_cast<unsigned long long>(stats_.samples));
  }
  ++sessions_done_;
  PcLineMap::Stats ls = lines_.stats();
  stats_.binaries = ls.binaries;
  stats_.binary_bytes = ls.binary_bytes;
  stats_.line_lookups = ls.lookups;
  running_.store(false, std::memory_order_release);
  sink_ = nullptr;
}

void PcSampler::on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept {
  if (data == nullptr) return;
  try {
    switch (cbid) {
      case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
        const auto* m = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
        if (m == nullptr || m->pCubin == nullptr || m->cubinSize == 0 ||
            api_->cuptiGetCubinCrc == nullptr) {
          return;
        }
        CUpti_GetCubinCrcParams cp{};
        cp.size = CUpti_GetCubinCrcParamsSize;
        cp.cubin = m->pCubin;
        cp.cubinSize = m->cubinSize;
        if (api_->cuptiGetCubinCrc(&cp) == CUPTI_SUCCESS) {
          lines_.add_binary(cp.cubinCrc, m->pCubin, m->cubinSize);
        }
        return;
      }
      case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: {
        // Enabled here, on the creating thread, before its first kernel, unless the drain
        // thread holds mu_ (inside GetData, which may want a driver lock this thread holds):
        // then the drain thread enables it at its next tick.
        std::unique_lock lock(mu_, std::try_to_lock);
        if (!lock.owns_lock()) {
          std::lock_guard pending(pending_mu_);
          pending_contexts_.push_back(data->context);
          return;
        }
        if (!stopping_) enable_or_warn(data->context);
        return;
      }
      case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: {
        std::lock_guard lock(mu_);
        for (auto it = contexts_.begin(); it != contexts_.end(); ++it) {
          if ((*it)->ctx != data->context) continue;
          disable_locked(**it);
          deliver();
          contexts_.erase(it);
          break;
        }
        return;
      }
      default:
        return;
    }
  } catch (...) {
    // Never through CUPTI: a failed allocation loses this binary's lines or this context.
  }
}

PcSamplingStats PcSampler::stats() const {
  std::lock_guard lock(mu_);
  PcSamplingStats s = stats_;
  s.running = running();
  if (s.running) {
    PcLineMap::Stats ls = lines_.stats();
    s.binaries = ls.binaries;
    s.binary_bytes = ls.binary_bytes;
    s.line_lookups = ls.lookups;
  }
  return s;
}

PcSamplingStats pc_sampling_stats() {
  return PcSampler::global().stats();
}

void pc_sampling_resource(CUpti_CallbackId cbid, const CUpti_ResourceData* data) noexcept {
  PcSampler* s = g_active.load(std::memory_order_acquire);
  if (s != nullptr) s->on_resource(cbid, data);
}

bool set_pc_sampling_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                               std::string& error) {
  bool ok = true;
  for (CUpti_CallbackId cbid :
       {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_MODULE_LOADED}) {
    CUptiResult r =
        api.cuptiEnableCallback(enable ? 1u : 0u, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid);
    if (r != CUPTI_SUCCESS && ok) {
      ok = false;
      error = cupti_error(api, "cuptiEnableCallback(resource)", r);
    }
  }
  return ok;
}

}  // namespace proton::cupti
