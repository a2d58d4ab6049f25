// context="python": the ContextId of the calling thread's Python call path, per launch.
//
// Installed as LaunchStage::python_context_provider; the launch callback calls it only while a
// python-context session is active. Cost per launch at a steady call site: the raw frame walk
// (python_frames.h, a few loads per frame) and a comparison with the path this thread walked
// last time; the common prefix keeps its ContextIds, so a loop that launches from the same
// place resolves nothing. A frame that changed costs two hash lookups in this thread's caches
// ((code, instruction) -> frame name, (parent, name) -> ContextId); only a frame never seen
// by this thread builds its name and takes the global interning locks. No Python object is
// created, no reference count touched, no GIL taken.
//
// The path ends with the thread's state, as in triton.profiler (Python frames + state); user
// scopes do not appear in python-context sessions: a scope is the path of its entry (module.cpp
// records it), where its metrics go. A thread with no Python frames (autograd's
// backward threads, C++ pools) gets kRootContext, and its kernels fall back to the shadow
// context: the scopes and state of the thread that owns them.
#include "bindings/python_context.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "attribution/launch_stage.h"
#include "bindings/python_frames.h"
#include "common/name_table.h"
#include "context/context_tree.h"
#include "context/thread_context.h"
#include "session/runtime.h"

namespace nb = nanobind;

namespace proton::python {

namespace {

// Deeper stacks keep their innermost frames under a "<older frames>" frame.
constexpr int kMaxFrames = 512;
// A thread that sees this many distinct (code, instruction) sites starts its site cache anew
// (programs that generate code forever must not grow it without bound).
constexpr size_t kMaxSites = size_t{1} << 16;

struct SiteKey {
  const void* code;
  int32_t lasti;
  bool operator==(const SiteKey&) const = default;
};
struct SiteHash {
  size_t operator()(const SiteKey& k) const {
    return std::hash<const void*>()(k.code) ^ (static_cast<size_t>(k.lasti) * 0x9E3779B97F4A7C15);
  }
};
struct Site {
  CodeIdentity identity;  // tells a reused code address apart
  NameId name;
};

// One per launching thread, owned by it: no lock.
struct ThreadCache {
  std::unordered_map<SiteKey, Site, SiteHash> sites;
  std::unordered_map<uint64_t, ContextId> children;  // (parent << 32 | name) -> child
  // The last walk, outermost first: its frames and the ContextId of each prefix.
  int last_n = 0;
  bool last_truncated = false;
  RawFrame last[kMaxFrames];
  CodeIdentity last_id[kMaxFrames];  // a code object freed and another made at its address differ
  ContextId last_ctx[kMaxFrames];
  RawFrame walk[kMaxFrames];  // scratch for the current walk, innermost first
  uint64_t resolved = 0;      // frames looked up because they differed from the last walk
};

ContextId child(ThreadCache& tc, ContextId parent, NameId name) {
  uint64_t key = (uint64_t{parent} << 32) | name;
  if (auto it = tc.children.find(key); it != tc.children.end()) return it->second;
  ContextId id = ContextTree::global().child(parent, name);
  tc.children.emplace(key, id);
  return id;
}

NameId site_name(ThreadCache& tc, const RawFrame& f) {
  SiteKey key{f.code, f.lasti};
  CodeIdentity identity = code_identity(f.code);
  if (auto it = tc.sites.find(key); it != tc.sites.end() && it->second.identity == identity) {
    return it->second.name;
  }
  if (tc.sites.size() >= kMaxSites) tc.sites.clear();
  NameId name = NameTable::global().intern(frame_name(f.code, f.lasti));
  tc.sites.insert_or_assign(key, Site{identity, name});
  return name;
}

// Owned by the thread, freed at its exit; constinit pointer so the hot path has no TLS guard.
constinit thread_local ThreadCache* tls_cache = nullptr;
struct CacheOwner {
  ~CacheOwner() {
    delete tls_cache;
    tls_cache = nullptr;
  }
};
thread_local CacheOwner tls_cache_owner;

ThreadCache& thread_cache() {
  if (tls_cache == nullptr) [[unlikely]] {
    tls_cache = new ThreadCache();
    (void)&tls_cache_owner;  // odr-use: registers the destructor for this thread
  }
  return *tls_cache;
}

ContextId walk(ThreadCache& tc) {
  bool truncated = false;
  int n = collect_frames(tc.walk, kMaxFrames, truncated);
  if (n == 0) {
    tc.last_n = 0;
    return kRootContext;
  }
  // Longest prefix (outermost first) equal to the last walk keeps its ContextIds.
  int same = 0;
  if (truncated == tc.last_truncated) {
    int limit = n < tc.last_n ? n : tc.last_n;
    while (same < limit && tc.walk[n - 1 - same].code == tc.last[same].code &&
           tc.walk[n - 1 - same].lasti == tc.last[same].lasti &&
           code_identity(tc.walk[n - 1 - same].code) == tc.last_id[same]) {
      ++same;
    }
  }
  ContextId ctx = kRootContext;
  if (same > 0) {
    ctx = tc.last_ctx[same - 1];
  } else if (truncated) {
    ctx = child(tc, kRootContext, NameTable::global().intern("<older frames>"));
  }
  tc.resolved += static_cast<uint64_t>(n - same);
  for (int i = same; i < n; ++i) {
    const RawFrame& f = tc.walk[n - 1 - i];
    ctx = child(tc, ctx, site_name(tc, f));
    tc.last[i] = f;
    tc.last_id[i] = code_identity(f.code);
    tc.last_ctx[i] = ctx;
  }
  tc.last_n = n;
  tc.last_truncated = truncated;
  return ctx;
}

}  // namespace

ContextId current_python_context() noexcept {
  try {
    ThreadCache& tc = thread_cache();
    ContextId ctx = walk(tc);
    if (ctx == kRootContext) return kRootContext;
    NameId state = ThreadContext::current().state();
    return state == kNoName ? ctx : child(tc, ctx, state);
  } catch (...) {
    // Out of memory while growing a cache or the trie: this launch falls back to the shadow
    // context; never unwind into the driver.
    return kRootContext;
  }
}

void register_python_context(nb::module_& m) {
  if (frames_supported()) {
    LaunchStage::python_context_provider.store(&current_python_context, std::memory_order_release);
  }
  // Interpreter teardown frees the thread states the walker reads: stop walking before it.
  m.def("_python_context_shutdown",
        [] { LaunchStage::python_context_provider.store(nullptr, std::memory_order_release); });
  m.def("_python_frames_supported", &frames_supported);
  // Test hooks: the path a launch made here would be attributed to, outermost first; the
  // _nogil variant walks with the GIL released, as the launch callback does.
  auto path_of = [](ContextId ctx) {
    std::vector<NameId> ids;
    ContextTree::global().path(ctx, ids);
    std::vector<std::string> names;
    for (NameId id : ids)
      names.emplace_back(NameTable::global().name(id));
    return names;
  };
  m.def("_python_context_path", [path_of] { return path_of(current_python_context()); });
  m.def("_python_context_path_nogil", [path_of] {
    ContextId ctx;
    {
      nb::gil_scoped_release release;
      ctx = current_python_context();
    }
    return path_of(ctx);
  });
  // proton.context.depth of a context="python" session, as triton.profiler counts it: the
  // calling thread's Python frames (the state not counted; at most the walker's cap).
  m.def("_python_frame_count", [] {
    bool truncated = false;
    return frames_supported() ? collect_frames(thread_cache().walk, kMaxFrames, truncated) : 0;
  });
  m.def("_is_python_session",
        [](SessionId id) { return frames_supported() && Runtime::get().is_python_session(id); });
  // Frames the calling thread's walks have resolved so far (not reused from its last walk):
  // lets tests check that a steady call site resolves nothing, without timing anything.
  m.def("_python_context_resolved_frames", [] { return thread_cache().resolved; });
  // Benchmark hook: ns per provider call from here, GIL released as in the launch callback.
  m.def("_python_context_cost_ns", [](int calls) {
    nb::gil_scoped_release release;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      (void)current_python_context();
    std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count() / (calls > 0 ? calls : 1);
  });
}

}  // namespace proton::python
