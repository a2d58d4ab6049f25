#include "io/run_info.h"

#include <mutex>

#include "common/version.h"

namespace proton {

namespace {

// Written from the Python thread that starts a session, read by whichever thread finalizes.
std::mutex& info_mu() {
  static std::mutex mu;
  return mu;
}

RunInfo& info_slot() {
  static RunInfo info;  // guarded by info_mu()
  return info;
}

}  // namespace

void set_run_info(const RunInfo& info) {
  std::lock_guard lock(info_mu());
  info_slot() = info;
}

RunInfo run_info() {
  std::lock_guard lock(info_mu());
  return info_slot();
}

const char* proton_version() {
  return kProtonVersion;
}

}  // namespace proton
