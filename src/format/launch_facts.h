// The Hatchet names of a kernel's launch facts (data/launch_facts.h): metrics of the kernel's
// node that the writer marks "pty" in the root's "metric_rules" and leaves out of the root's
// columns, so Hatchet and Triton's viewer treat them as they treat device_id (per node, never
// rolled up) and our viewer shows them as stored. The analyzer reads them by these names.
#pragma once

namespace proton::format::launch_facts {

inline constexpr const char* kGrid[3] = {"grid_x", "grid_y", "grid_z"};              // blocks
inline constexpr const char* kBlock[3] = {"block_x", "block_y", "block_z"};          // threads
inline constexpr const char* kCluster[3] = {"cluster_x", "cluster_y", "cluster_z"};  // blocks
inline constexpr const char* kRegisters = "registers_per_thread";
inline constexpr const char* kStaticShared = "static_shared_bytes";    // per block
inline constexpr const char* kDynamicShared = "dynamic_shared_bytes";  // per block
inline constexpr const char* kLocal = "local_bytes_per_thread";        // spills, local arrays
// 1 on a node whose launches did not all have one configuration (the others are then the last
// launch's); absent otherwise.
inline constexpr const char* kVaries = "launch_config_varies";

}  // namespace proton::format::launch_facts
