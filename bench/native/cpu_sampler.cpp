#include "cpu_sampler.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace proton::bench {

namespace {

constexpr int kScanned = 48;  // code addresses kept from the stack scan

struct Sample {
  int32_t label;
  uintptr_t pc;
  uintptr_t callers[kScanned];  // words on the stack that point into code, nearest first
};

// Executable segments of the objects loaded when the sampler started, sorted: the handler keeps
// the stack words that fall in one (likely return addresses; frame pointers are rare here).
std::vector<std::pair<uintptr_t, uintptr_t>> g_code;

bool in_code(uintptr_t word) {
  size_t lo = 0, hi = g_code.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (word < g_code[mid].first) {
      hi = mid;
    } else if (word >= g_code[mid].second) {
      lo = mid + 1;
    } else {
      return true;
    }
  }
  return false;
}

int add_code_ranges(dl_phdr_info* info, size_t, void*) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) != 0)
      g_code.emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  return 0;
}

// The handler reads these; they change only while no timer is armed (or, for the label, by
// one atomic store).
std::vector<Sample> g_samples;
std::atomic<size_t> g_taken{0};
std::atomic<uint64_t> g_dropped{0};
std::atomic<int> g_label{-1};
timer_t g_timer{};
bool g_armed = false;
uintptr_t g_stack_top = 0;  // the sampled thread's stack ends below this
struct sigaction g_previous {};

uintptr_t interrupted_pc(const void* context, uintptr_t (&callers)[kScanned]) {
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  const auto* stack = reinterpret_cast<const uintptr_t*>(uc->uc_mcontext.gregs[REG_RSP]);
  const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  const auto* stack = reinterpret_cast<const uintptr_t*>(uc->uc_mcontext.sp);
  const uintptr_t pc = static_cast<uintptr_t>(uc->uc_mcontext.pc);
#else
  const uintptr_t* stack = nullptr;
  const uintptr_t pc = 0;
#endif
  // The first words above the stack pointer that point into code, up to 32 KB (the driver's
  // frames are large) and never past the thread's stack.
  int found = 0;
  const uintptr_t* end = stack + 4096;
  if (g_stack_top != 0 && reinterpret_cast<uintptr_t>(end) > g_stack_top)
    end = reinterpret_cast<const uintptr_t*>(g_stack_top);
  for (const uintptr_t* w = stack; w != nullptr && w < end && found < kScanned; ++w)
    if (in_code(*w)) callers[found++] = *w;
  for (; found < kScanned; ++found)
    callers[found] = 0;
  return pc;
}

void on_signal(int, siginfo_t*, void* context) {
  const int label = g_label.load(std::memory_order_relaxed);
  if (label < 0) return;
  const size_t i = g_taken.fetch_add(1, std::memory_order_relaxed);
  if (i >= g_samples.size()) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Sample& s = g_samples[i];
  s.label = label;
  s.pc = interrupted_pc(context, s.callers);
}

// (library, nearest exported symbol or a 64 KB bucket of the offset) of a program counter.
std::pair<std::string, std::string> resolve(uintptr_t pc) {
  Dl_info info{};
  if (pc == 0 || dladdr(reinterpret_cast<void*>(pc), &info) == 0) return {"?", "?"};
  std::string library = info.dli_fname != nullptr ? info.dli_fname : "?";
  if (info.dli_sname != nullptr) return {library, info.dli_sname};
  char bucket[32];
  const auto offset = pc - reinterpret_cast<uintptr_t>(info.dli_fbase);
  // Our own objects exactly (symbolized afterwards with nm); others by 64 KB.
  const bool ours = library.find("_proton") != std::string::npos;
  std::snprintf(bucket, sizeof bucket, "+0x%zx",
                static_cast<size_t>(ours ? offset : offset >> 16 << 16));
  return {library, bucket};
}

}  // namespace

void cpu_sampler_start(uint32_t period_us, size_t capacity) {
  if (g_armed) cpu_sampler_stop();
  g_samples.assign(capacity, Sample{});
  g_code.clear();
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* base = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &base, &size) == 0)
      g_stack_top = reinterpret_cast<uintptr_t>(base) + size;
    pthread_attr_destroy(&attr);
  }
  dl_iterate_phdr(add_code_ranges, nullptr);
  std::sort(g_code.begin(), g_code.end());
  g_taken.store(0);
  g_dropped.store(0);
  g_label.store(-1);
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGPROF, &sa, &g_previous) != 0) throw std::runtime_error("sigaction(SIGPROF)");
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = SIGPROF;
  ev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &ev, &g_timer) != 0) {
    sigaction(SIGPROF, &g_previous, nullptr);
    throw std::runtime_error("timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID)");
  }
  itimerspec spec{};
  spec.it_interval.tv_sec = period_us / 1'000'000;
  spec.it_interval.tv_nsec = static_cast<long>(period_us % 1'000'000) * 1000;
  spec.it_value = spec.it_interval;
  if (timer_settime(g_timer, 0, &spec, nullptr) != 0) {
    timer_delete(g_timer);
    sigaction(SIGPROF, &g_previous, nullptr);
    throw std::runtime_error("timer_settime");
  }
  g_armed = true;
}

void cpu_sampler_label(int label) {
  g_label.store(label, std::memory_order_relaxed);
}

void cpu_sampler_stop() {
  g_label.store(-1);
  if (!g_armed) return;
  timer_delete(g_timer);
  sigaction(SIGPROF, &g_previous, nullptr);
  g_armed = false;
}

std::vector<SampleBucket> cpu_sampler_report(uint64_t& dropped) {
  dropped = g_dropped.load();
  const size_t n = std::min(g_taken.load(), g_samples.size());
  std::map<std::tuple<int, std::string, std::string, std::string>, uint64_t> counts;
  for (size_t i = 0; i < n; ++i) {
    const Sample& s = g_samples[i];
    auto [library, symbol] = resolve(s.pc);
    std::string caller;
    if (library.find("libc.so") != std::string::npos) {  // a wrapper: who called it
      for (uintptr_t c : s.callers) {
        if (c == 0) break;
        auto [caller_library, caller_symbol] = resolve(c);
        if (!caller.empty()) caller += " | ";
        caller += caller_library + " " + caller_symbol;
      }
    }
    ++counts[{s.label, library, symbol, caller}];
  }
  std::vector<SampleBucket> out;
  out.reserve(counts.size());
  for (auto& [key, count] : counts)
    out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), count});
  return out;
}

}  // namespace proton::bench
