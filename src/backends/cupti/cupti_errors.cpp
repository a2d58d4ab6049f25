#include "backends/cupti/cupti_errors.h"

namespace proton::cupti {

namespace {

// What to do about the failures a user can fix; empty when there is nothing to add.
std::string_view advice(CUptiResult result) {
  switch (result) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      // CUPTI allows one subscriber per process. In practice the holder is one of these.
      return "CUPTI allows one profiler per process and another tool holds it: likely "
             "torch.profiler (Kineto), triton.profiler (Triton's Proton), Nsight Systems "
             "(nsys), Nsight Compute (ncu), cuda-gdb or compute-sanitizer. Stop that tool's "
             "session (or run without it) and start proton again";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "the driver restricts GPU profiling to administrators "
             "(NVreg_RestrictProfilingToAdminUsers); run as root or lift the restriction";
    case CUPTI_ERROR_NOT_INITIALIZED:
      return "libcupti does not match the installed driver; point PROTON_CUPTI_PATH at the "
             "libcupti of a CUDA version the driver supports";
    case CUPTI_ERROR_NOT_COMPATIBLE:
      // Measured on an H100 with CUDA 13: after another client of this process enabled PC
      // sampling on the context, cuptiActivityEnable(CONCURRENT_KERNEL) fails so.
      return "either another tool in this process has enabled CUPTI's PC sampling first (CUPTI "
             "then refuses kernel tracing: stop it, or start proton first), or libcupti does not "
             "match the installed driver (point PROTON_CUPTI_PATH at the libcupti of a CUDA "
             "version the driver supports)";
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
      return "CUPTI cannot trace kernels on this GPU setup";
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return "another tool in this process uses CUPTI's legacy event/metric API";
    default:
      return {};
  }
}

}  // namespace

std::string describe_cupti_error(std::string_view call, CUptiResult result,
                                 std::string_view cupti_text, std::string_view holder) {
  std::string msg(call);
  msg += " failed: ";
  if (cupti_text.empty()) {
    msg += "CUPTI error " + std::to_string(static_cast<int>(result));
  } else {
    msg += cupti_text;
  }
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && !holder.empty()) {
    msg += " (held by '";
    msg += holder;
    msg += "')";
  }
  std::string_view hint = advice(result);
  if (!hint.empty()) {
    msg += ". ";
    msg += hint;
  }
  return msg;
}

}  // namespace proton::cupti
