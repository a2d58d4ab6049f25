#include "common/hot.h"

namespace proton::hot {

constinit thread_local Thread thread{kRootContext, false, 0, nullptr, 0, 0, 0, 0};
constinit Globals globals;

}  // namespace proton::hot
