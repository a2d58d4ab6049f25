#include <memory>
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

std::unique_ptr<Backend> make_backend(std::string_view name, std::string& why) {
  if (name.empty() || name == "cupti") {
#ifdef PROTON_HAVE_CUPTI
    return make_cupti_backend(why);
#else
    why = "this build of proton has no CUPTI backend (CUPTI headers were not found at build time)";
    return nullptr;
#endif
  }
  why = "unknown backend '" + std::string(name) + "' (available: cupti)";
  return nullptr;
}

}  // namespace proton
