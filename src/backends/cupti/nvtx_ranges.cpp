#include "backends/cupti/nvtx_ranges.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/name_table.h"

namespace proton::cupti {

namespace {

std::atomic<uint64_t> g_mismatches{0};  // relaxed counters
std::atomic<uint64_t> g_lost_pops{0};

// The NVTX ranges open on this thread as scopes, innermost last (owning thread only): the
// scope's context, the range's domain (0: the default one), its name, and the thread's scope
// depth once it was open.
struct OpenRange {
  ContextId ctx;
  uintptr_t domain;
  NameId name;
  size_t depth;
};
thread_local std::vector<OpenRange> tls_nvtx;

// BackendOptions::nvtx_debug (PROTON_NVTX_DEBUG=1): every push and pop on stderr, with what
// was done about it. Set at backend start, read (relaxed) in the NVTX callbacks.
std::atomic<bool> g_debug_log{false};

bool debug_log() {
  return g_debug_log.load(std::memory_order_relaxed);
}

void log_range(const char* what, uintptr_t domain, std::string_view name, const char* note) {
  const char* text = name.empty() ? "" : name.data();  // an empty view may hold no pointer
  std::fprintf(stderr, "proton nvtx: thread %ld %s domain %#lx '%.*s' depth %zu%s%s\n",
               static_cast<long>(::gettid()), what, static_cast<unsigned long>(domain),
               static_cast<int>(name.size()), text, tls_nvtx.size(), note ? ": " : "",
               note ? note : "");
}

}  // namespace

void set_nvtx_debug(bool on) noexcept {
  g_debug_log.store(on, std::memory_order_relaxed);
}

void nvtx_count_mismatch() noexcept {
  g_mismatches.fetch_add(1, std::memory_order_relaxed);
}

void nvtx_push(std::string_view name, uintptr_t domain) noexcept {
  try {
    ThreadContext& tc = ThreadContext::current();
    tls_nvtx.reserve(tls_nvtx.size() + 1);  // cannot fail after the scope is open
    NameId id = NameTable::global().intern(name);
    tc.enter_scope(id);
    tls_nvtx.push_back({tc.scope_context(), domain, id, tc.open_scopes()});
    if (debug_log()) log_range("push", domain, name, nullptr);
  } catch (...) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
  }
}

void nvtx_pop(uintptr_t domain) noexcept {
  // NVTX nests ranges per domain: a pop closes the innermost open range of its own domain.
  size_t k = tls_nvtx.size();
  size_t i = k;
  while (i > 0 && tls_nvtx[i - 1].domain != domain)
    --i;
  if (i == 0) {  // a range pushed before NVTX reached us, or an extra pop
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
    if (debug_log()) log_range("pop", domain, {}, "no open range of this domain: ignored");
    return;
  }
  --i;
  try {
    ThreadContext& tc = ThreadContext::current();
    // The range and every NVTX range opened after it must be the innermost scopes of the
    // thread, one inside the other: a user scope opened inside them is still open, and NVTX
    // never closes a user's scope (the ranges stay open; counted).
    bool ours =
        tc.open_scopes() == tls_nvtx[k - 1].depth && tc.scope_context() == tls_nvtx[k - 1].ctx;
    for (size_t j = i + 1; ours && j < k; ++j)
      ours = tls_nvtx[j].depth == tls_nvtx[j - 1].depth + 1;
    if (!ours) {
      tls_nvtx.erase(tls_nvtx.begin() + static_cast<std::ptrdiff_t>(i));
      g_mismatches.fetch_add(1, std::memory_order_relaxed);
      if (debug_log()) log_range("pop", domain, {}, "a user scope is open inside: left open");
      return;
    }
    if (debug_log()) {
      log_range("pop", domain, NameTable::global().name(tls_nvtx[i].name),
                i + 1 < k ? "ranges of other domains inside it are reopened" : nullptr);
    }
    // Ranges of other domains pushed after it stay open in NVTX: close them with it and open
    // them again in the same order, one level up.
    for (size_t j = k; j > i; --j)
      tc.exit_scope(kNoName);
    tls_nvtx.erase(tls_nvtx.begin() + static_cast<std::ptrdiff_t>(i));
    for (size_t j = i; j < tls_nvtx.size(); ++j) {
      tc.enter_scope(tls_nvtx[j].name);
      tls_nvtx[j].ctx = tc.scope_context();
      tls_nvtx[j].depth = tc.open_scopes();
    }
  } catch (...) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
  }
}

void close_library_ranges(ThreadContext& tc) noexcept {
  // Python code cannot run inside a library call, so a library-domain range still open on this
  // thread when the user opens a scope lost its pop (NCCL's ncclCommInitRankConfig and
  // ncclCommFinalize ranges are pushed and never popped): close it, innermost first, as long
  // as it is the thread's innermost scope. Ranges of the default domain (range_push, emit_nvtx)
  // can hold user code and stay.
  while (!tls_nvtx.empty() && tls_nvtx.back().domain != 0) {
    const OpenRange& r = tls_nvtx.back();
    if (tc.open_scopes() != r.depth || tc.scope_context() != r.ctx) break;
    if (debug_log()) {
      log_range("close", r.domain, NameTable::global().name(r.name),
                "a library range left open when a user scope opens");
    }
    try {
      tc.exit_scope(kNoName);
    } catch (...) {
      break;
    }
    tls_nvtx.pop_back();
    g_lost_pops.fetch_add(1, std::memory_order_relaxed);
  }
}

size_t nvtx_depth() noexcept {
  return tls_nvtx.size();
}

uint64_t nvtx_mismatches() {
  return g_mismatches.load(std::memory_order_relaxed);
}

uint64_t nvtx_lost_pops() {
  return g_lost_pops.load(std::memory_order_relaxed);
}

}  // namespace proton::cupti
