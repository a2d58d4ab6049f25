#include "backends/cupti/counters_api.h"

#include <dlfcn.h>

#include <mutex>

namespace proton::cupti {

namespace {

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& slot, std::string& why) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (slot == nullptr && why.empty()) {
    why = std::string("this CUPTI has no ") + name +
          " (hardware counters need the Range Profiler and PM sampling of CUDA 12.6 or newer)";
  }
  return slot != nullptr;
}

}  // namespace

const CountersApi* load_counters_api(const CuptiApi& cupti, std::string& why) {
  static std::mutex mu;
  static CountersApi table;
  static bool loaded = false;
  std::lock_guard lock(mu);
  if (loaded) return &table;
  // RTLD_NOLOAD: the libraries are already open (load_cupti / load_driver); this only hands
  // back their handles, and the reference taken is kept for the life of the process.
  void* lib = dlopen(cupti.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(cupti.path.c_str(), RTLD_NOW);
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cuda == nullptr) cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == nullptr || cuda == nullptr) {
    why = "cannot reopen " + std::string(lib == nullptr ? cupti.path : "libcuda.so.1");
    return nullptr;
  }
  CountersApi t;
  std::string missing;
  bool ok = true;
  // Two-level stringizing: cuda.h maps some names to versioned symbols with macros
  // (cuCtxPushCurrent -> cuCtxPushCurrent_v2), and the symbol is the expanded name.
#define PROTON_STR2(x) #x
#define PROTON_STR(x) PROTON_STR2(x)
#define PROTON_RESOLVE_CUPTI(name) ok = resolve(lib, PROTON_STR(name), t.name, missing) && ok;
#define PROTON_RESOLVE_DRIVER(name) ok = resolve(cuda, PROTON_STR(name), t.name, missing) && ok;
  PROTON_COUNTERS_CUPTI(PROTON_RESOLVE_CUPTI)
  PROTON_COUNTERS_DRIVER(PROTON_RESOLVE_DRIVER)
#undef PROTON_RESOLVE_CUPTI
#undef PROTON_RESOLVE_DRIVER
#undef PROTON_STR
#undef PROTON_STR2
  if (!ok) {
    why = missing;
    return nullptr;
  }
  t.cupti = &cupti;
  table = t;
  loaded = true;
  return &table;
}

std::string counters_error(const CountersApi& api, const char* call, CUptiResult r) {
  if (api.cupti != nullptr) return cupti_error(*api.cupti, call, r);
  return std::string(call) + " failed (CUPTI error " + std::to_string(static_cast<int>(r)) + ")";
}

bool ensure_profiler_initialized(const CountersApi& api, std::string& why) {
  static std::once_flag once;
  static CUptiResult result = CUPTI_SUCCESS;
  std::call_once(once, [&] {
    CUpti_Profiler_Initialize_Params p{};
    p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
    result = api.cuptiProfilerInitialize(&p);
  });
  if (result == CUPTI_SUCCESS) return true;
  why = counters_error(api, "cuptiProfilerInitialize", result);
  return false;
}

}  // namespace proton::cupti
