#include "backends/cupti/cupti_api.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "backends/cupti/cupti_errors.h"
#include "backends/cupti/library_search.h"

namespace proton::cupti {

namespace {

// Guards the tables, the search paths and the activity owner. Loading happens in start(),
// never in a callback. The tables are leaked on purpose: CUPTI may deliver a last buffer on its
// own thread after the backend object is gone, and that path still calls through the table.
std::mutex g_mu;
CuptiApi* g_cupti = nullptr;             // guarded by g_mu; immutable once set
DriverApi* g_driver = nullptr;           // guarded by g_mu; immutable once set
std::vector<std::string> g_extra_dirs;   // guarded by g_mu
const char* g_activity_owner = nullptr;  // guarded by g_mu

template <typename Fn>
bool resolve(void* handle, const char* name, Fn& slot) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  return slot != nullptr;
}

// Fills `api` from `handle`; returns the first missing required symbol, or "" when complete.
std::string fill(void* handle, CuptiApi& api) {
#define PROTON_RESOLVE_REQUIRED(name) \
  if (!resolve(handle, #name, api.name)) return #name;
  PROTON_CUPTI_REQUIRED(PROTON_RESOLVE_REQUIRED)
#define PROTON_RESOLVE_OPTIONAL(name) resolve(handle, #name, api.name);
  PROTON_CUPTI_OPTIONAL(PROTON_RESOLVE_OPTIONAL)
  PROTON_CUPTI_PC_SAMPLING(PROTON_RESOLVE_OPTIONAL)
  return {};
}

std::string fill(void* handle, DriverApi& api) {
  PROTON_DRIVER_REQUIRED(PROTON_RESOLVE_REQUIRED)
  return {};
#undef PROTON_RESOLVE_REQUIRED
#undef PROTON_RESOLVE_OPTIONAL
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The folder two levels above the shared object holding this code: site-packages when we run
// as site-packages/proton/_proton*.so.
std::vector<std::string> module_python_roots() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_cupti), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  std::string root = parent(parent(info.dli_fname));
  if (root.empty()) return {};
  return {root};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Tries each candidate; returns the first handle whose table is complete.
void* open_first(const std::vector<std::string>& candidates, CuptiApi& api, std::string& why) {
  std::string last_error;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      // A bare soname the loader cannot find is the normal "not here" case, not an error.
      if (path.find('/') != std::string::npos) last_error = dlerror();
      continue;
    }
    CuptiApi candidate;
    std::string missing = fill(handle, candidate);
    if (!missing.empty()) {
      last_error = path + " lacks " + missing + " (too old a CUPTI)";
      dlclose(handle);
      continue;
    }
    api = candidate;
    api.path = path;
    return handle;
  }
  why = "libcupti not found";
  if (!last_error.empty()) why += " (last failure: " + last_error + ")";
  why +=
      "; install the nvidia-cuda-cupti wheel or set PROTON_CUPTI_PATH to the folder "
      "holding libcupti.so";
  return nullptr;
}

}  // namespace

const CuptiApi* load_cupti(std::string& why, const std::string& override_path) {
  std::lock_guard lock(g_mu);
  if (g_cupti != nullptr) return g_cupti;
  LibrarySearch search;
  search.override_path = override_path;
  std::vector<std::string> candidates;
  if (search.override_path.empty()) {
    // A copy already resident (e.g. loaded by torch) wins over any file on disk.
    for (const std::string& name : cupti_file_names()) {
      if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
        dlclose(h);
        candidates.push_back(name);
      }
    }
    search.extra_dirs = g_extra_dirs;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
      std::string root = env(var);
      if (!root.empty()) search.cuda_roots.push_back(root);
    }
    search.cuda_roots.push_back("/usr/local/cuda");
    search.python_roots = module_python_roots();
    for (std::string& c : existing_candidates(cupti_candidates(search), exists)) {
      candidates.push_back(std::move(c));
    }
  } else if (search.override_path.find('/') == std::string::npos) {
    candidates.push_back(search.override_path);  // a bare name: the loader resolves it
  } else {
    // An explicit choice is not second-guessed: if it fails, say so instead of loading another.
    for (std::string& c : cupti_candidates(search)) {
      if (c.find('/') != std::string::npos) candidates.push_back(std::move(c));
    }
  }
  auto api = std::make_unique<CuptiApi>();
  if (open_first(candidates, *api, why) == nullptr) {
    if (!search.override_path.empty()) {
      why = "PROTON_CUPTI_PATH=" + search.override_path + ": " + why;
    }
    return nullptr;
  }
  g_cupti = api.release();
  return g_cupti;
}

const DriverApi* load_driver(std::string& why) {
  std::lock_guard lock(g_mu);
  if (g_driver != nullptr) return g_driver;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    why =
        "the NVIDIA driver library (libcuda.so.1) was not found: no NVIDIA driver on this "
        "machine, so there are no GPU kernels to time";
    return nullptr;
  }
  auto api = std::make_unique<DriverApi>();
  std::string missing = fill(handle, *api);
  if (!missing.empty()) {
    why = "libcuda.so.1 lacks " + missing + ": the NVIDIA driver is too old";
    return nullptr;
  }
  g_driver = api.release();
  return g_driver;
}

void set_cupti_search_paths(std::vector<std::string> dirs) {
  std::lock_guard lock(g_mu);
  g_extra_dirs = std::move(dirs);
}

std::string cupti_error(const CuptiApi& api, const char* call, CUptiResult result) {
  const char* text = nullptr;
  if (api.cuptiGetResultString(result, &text) != CUPTI_SUCCESS) text = nullptr;
  return describe_cupti_error(call, result, text == nullptr ? "" : text);
}

bool set_callback(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                  CUpti_CallbackDomain domain, CUpti_CallbackId cbid, std::string& error) {
  CUptiResult r = api.cuptiEnableCallback(enable ? 1u : 0u, subscriber, domain, cbid);
  if (r == CUPTI_SUCCESS) return true;
  if (error.empty() && r != CUPTI_ERROR_INVALID_PARAMETER) {
    error = cupti_error(api, "cuptiEnableCallback", r);
  }
  return false;
}

bool claim_activity(const char* owner, std::string& why) {
  std::lock_guard lock(g_mu);
  if (g_activity_owner != nullptr && std::strcmp(g_activity_owner, owner) != 0) {
    why = std::string("CUPTI activity tracing is already in use by proton's ") + g_activity_owner +
          "; stop it first";
    return false;
  }
  g_activity_owner = owner;
  return true;
}

void release_activity(const char* owner) {
  std::lock_guard lock(g_mu);
  if (g_activity_owner != nullptr && std::strcmp(g_activity_owner, owner) == 0) {
    g_activity_owner = nullptr;
  }
}

}  // namespace proton::cupti
