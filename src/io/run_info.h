// Which process of a multi-process job wrote a file: rank, world size, host, device.
//
// Set once per process by the Python layer (python/proton/_ranks.py reads the launcher's
// environment or torch.distributed) and read by the writers at finalize. A process that is not
// one rank of a job leaves it unset (rank < 0) and its files stay byte-for-byte as before.
//
// In a Hatchet file the fields are extra keys of the root's "frame" object:
//   {"frame": {"name": "ROOT", "type": "function", "rank": 3, "world_size": 8, "local_rank": 3,
//              "host": "node7", "device": "3", "launcher": "torchrun", "proton_version": "0.1.0"}}
// Hatchet (and so triton.profiler's viewer) keeps unknown frame keys as frame attributes and
// ignores them otherwise; a metric on the root would become a summed column, and a third array
// element or a device-map entry would break triton.profiler's viewer. In a Chrome trace they are
// "proton_rank", "proton_world_size", ... in "otherData".
#pragma once

#include <cstdint>
#include <string>

namespace proton {

struct RunInfo {
  int64_t rank = -1;  // < 0: not one rank of a job; nothing is written
  int64_t world_size = -1;
  int64_t local_rank = -1;  // < 0: unknown
  std::string host;
  std::string device;    // the device this rank drives ("0"), empty when unknown
  std::string launcher;  // "torchrun", "slurm", "mpi", "torch.distributed"

  bool is_rank() const { return rank >= 0; }
};

// Process-wide; guarded by a mutex inside (set from Python, read by writers at finalize).
void set_run_info(const RunInfo& info);
RunInfo run_info();

// The version written into files ("0.1.0").
const char* proton_version();

}  // namespace proton
