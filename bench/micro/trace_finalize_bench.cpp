// Finalize time and memory of a large trace, on synthetic records (no GPU).
//
//   trace_finalize_bench [kernels=1000000] [data=trace] [budget_mb=0] [dir=/tmp]
//
// Launches `kernels` tagged launches across 4 streams and 2 scopes, delivers their records in
// batches of 4096 (the size of a few-MB CUPTI buffer) through the real record processor, then
// finalizes. Prints one JSON line: ingest ns/kernel (record thread work, including spilling),
// finalize seconds, peak RSS and the output size. bench/trace_finalize.py runs it.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "attribution/launch_stage.h"
#include "common/name_table.h"
#include "context/thread_context.h"
#include "session/runtime.h"

namespace {

using namespace proton;
using Clock = std::chrono::steady_clock;

class BenchBackend final : public Backend {
 public:
  std::string_view name() const override { return "bench"; }
  bool start(RecordProcessor*, const BackendOptions&, std::string&) override { return true; }
  void pause() override {}
  void resume() override {}
  void flush() override {}
  void stop() override {}
  DeviceInfo device(uint32_t id) override {
    DeviceInfo d;
    d.id = id;
    d.arch = "90";
    return d;
  }
};

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  size_t kernels = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::string data = argc > 2 ? argv[2] : "trace";
  double budget_mb = argc > 3 ? std::strtod(argv[3], nullptr) : 0;
  std::string dir = argc > 4 ? argv[4] : "/tmp";

  Runtime& rt = Runtime::get();
  rt.set_backend_for_testing(std::make_unique<BenchBackend>());
  ThreadContext::set_main_thread();
  SessionConfig config;
  config.name = dir + "/proton_trace_bench_" + std::to_string(::getpid());
  config.data = data;
  config.trace_budget_bytes = static_cast<uint64_t>(budget_mb * 1024 * 1024);
  SessionId session = rt.start(config);
  long rss_before = peak_rss_kb();

  auto& names = NameTable::global();
  NameId kernel_names[4] = {names.intern("gemm_kernel"), names.intern("softmax"),
                            names.intern("layernorm_fwd"), names.intern("elementwise_add")};
  NameId scopes[2] = {names.intern("forward"), names.intern("backward")};
  auto& tc = ThreadContext::current();

  constexpr size_t kBatch = 4096;
  std::vector<KernelRecord> batch;
  batch.reserve(kBatch);
  uint64_t gpu_time = steady_ns();
  uint64_t ingest_ns = 0;
  for (size_t i = 0; i < kernels; ++i) {
    if (i % 64 == 0) tc.enter_scope(scopes[(i / 64) % 2]);
    LaunchStage::tag(i + 1);
    KernelRecord r;
    r.correlation = i + 1;
    r.start_ns = gpu_time += 1500;
    r.end_ns = r.start_ns + 1000;
    r.name = kernel_names[i % 4];
    r.stream_id = 7 + static_cast<uint32_t>(i % 4);
    batch.push_back(r);
    if (i % 64 == 63) tc.exit_scope(kNoName);
    if (batch.size() == kBatch || i + 1 == kernels) {
      uint64_t t0 = steady_ns();
      rt.processor().process(batch);
      ingest_ns += steady_ns() - t0;
      batch.clear();
    }
  }
  if (tc.open_scopes() != 0) tc.exit_scope(kNoName);

  auto t0 = Clock::now();
  rt.finalize(session, "");
  double finalize_s = std::chrono::duration<double>(Clock::now() - t0).count();

  std::error_code ec;
  uintmax_t trace_bytes = std::filesystem::file_size(config.name + ".chrome_trace", ec);
  if (ec) trace_bytes = 0;
  std::printf(
      "{\"kernels\": %zu, \"data\": \"%s\", \"budget_mb\": %g, \"ingest_ns_per_kernel\": %.1f, "
      "\"finalize_s\": %.3f, \"peak_rss_mb\": %.1f, \"rss_growth_mb\": %.1f, "
      "\"trace_mb\": %.1f}\n",
      kernels, data.c_str(), budget_mb, static_cast<double>(ingest_ns) / kernels, finalize_s,
      peak_rss_kb() / 1024.0, (peak_rss_kb() - rss_before) / 1024.0, trace_bytes / 1048576.0);
  std::filesystem::remove(config.name + ".chrome_trace", ec);
  std::filesystem::remove(config.name + ".hatchet", ec);
  rt.set_backend_for_testing(nullptr);
  return 0;
}
