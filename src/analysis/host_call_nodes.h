// The host calls a profile recorded (Proton times synchronizes and blocking copies from their API
// callbacks): child frames of the calling frame named for the call, "cudaStreamSynchronize",
// "cudaDeviceSynchronize", "cudaEventSynchronize", "memcpy <direction> (pageable|blocking)", with
// "sync_time (ns)"/"sync_calls" or "memcpy_time (ns)"/"memcpy_calls"/"memcpy_bytes". The rules
// host_sync and sync_copy read them through this one reader.
#pragma once

#include <string>
#include <vector>

#include "analysis/profile_view.h"

namespace proton::analysis {

struct HostCallNode {
  int32_t node = 0;
  int32_t caller = 0;  // the frame that made the calls (the node's parent)
  std::string api;     // the frame's name
  bool copy = false;
  bool pageable = false;        // copies: the host side was pageable memory
  bool device_to_host = false;  // copies
  double time_ns = 0;           // host time inside the calls
  double calls = 0;
  double bytes = 0;  // copies
};

/// Every host-call frame with a positive time, in node order.
std::vector<HostCallNode> host_call_nodes(const ProfileView& view);

/// A device-to-host copy averaging under kSmallCopyBytes a call: a value read back, whose time
/// is the wait for the GPU (host_sync's, not sync_copy's).
bool reads_back(const HostCallNode& n);

}  // namespace proton::analysis
