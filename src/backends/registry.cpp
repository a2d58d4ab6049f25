#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"

namespace proton {

#ifdef PROTON_HAVE_CUPTI
std::unique_ptr<Backend> make_cupti_backend(std::string& why);
namespace cupti {
void set_cupti_search_paths(std::vector<std::string> dirs);
}
#endif

void set_library_search_paths(std::vector<std::string> dirs) {
#ifdef PROTON_HAVE_CUPTI
  cupti::set_cupti_search_paths(std::move(dirs));
#else
  (void)dirs;
#endif
}

namespace {
constexpr std::string_view kBackendNames[] = {"cupti", "instrumentation"};
}  // namespace

std::span<const std::string_view> backend_names() {
  return kBackendNames;
}

std::unique_ptr<Backend> make_backend(std::string_view name, std::string& why) {
  // An instrumentation session's regions come from the instrumentation runtime, which the
  // session layer opens; its kernel timing (and the launch callbacks that queue each launch's
  // copy-back) is CUPTI's.
  if (name.empty() || name == "cupti" || name == "instrumentation") {
#ifdef PROTON_HAVE_CUPTI
    return make_cupti_backend(why);
#else
    why = "this build of proton has no CUPTI backend (CUPTI headers were not found at build time)";
    return nullptr;
#endif
  }
  std::string list;
  for (std::string_view n : kBackendNames)
    list += (list.empty() ? "" : ", ") + std::string(n);
  why = "unknown backend '" + std::string(name) + "' (available: " + list + ")";
  return nullptr;
}

}  // namespace proton
