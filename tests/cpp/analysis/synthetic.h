// Synthetic profiles for the analyzer's tests: small trees built in code, one per case.
#pragma once

#include <string>
#include <vector>

#include "analysis/finding.h"
#include "analysis/profile_view.h"

namespace proton::analysis::testing {

// An H100-like device "0": 1 PFLOP/s at 16 bits, 3 TB/s.
inline ViewDevice h100() {
  ViewDevice d;
  d.type = "CUDA";
  d.id = "0";
  d.arch = "90";
  d.num_sms = 132;
  d.peak_flops_per_s = {2e15, 1e15, 5e14, 6.7e13};
  d.peak_bytes_per_s = 3e12;
  // The SM's limits as the driver states them for an H100.
  d.warp_size = 32;
  d.max_warps_per_sm = 64;
  d.max_blocks_per_sm = 32;
  d.registers_per_sm = 65536;
  d.shared_memory_per_sm = 233472;  // 228 KB
  d.reserved_shared_memory_per_block = 1024;
  return d;
}

// A kernel's launch facts, as the writer names them (format/launch_facts.h): a 1-D grid and
// block, registers per thread, dynamic shared memory and local memory per thread.
struct Launch {
  double grid = 1;
  double block = 128;
  double registers = 32;
  double shared = 0;
  double local = 0;
};
inline void set_launch(ProfileView& v, int32_t node, const Launch& l) {
  v.set(node, "grid_x", l.grid);
  v.set(node, "grid_y", 1);
  v.set(node, "grid_z", 1);
  v.set(node, "block_x", l.block);
  v.set(node, "block_y", 1);
  v.set(node, "block_z", 1);
  v.set(node, "registers_per_thread", l.registers);
  v.set(node, "static_shared_bytes", 0);
  v.set(node, "dynamic_shared_bytes", l.shared);
  v.set(node, "local_bytes_per_thread", l.local);
}

// A kernel launched `count` times for `time_ns` in all.
inline int32_t kernel(ProfileView& v, int32_t parent, const std::string& name, double count,
                      double time_ns) {
  int32_t k = v.add_kernel(parent, name, "0");
  v.set(k, "time (ns)", time_ns);
  v.set(k, "count", count);
  return k;
}

inline ProfileView with_root() {
  ProfileView v;
  v.add_node(-1, "ROOT");
  return v;
}

// ROOT > step > k on an H100: `time_ns` in 10 launches of `launch` (k is node 2).
inline ProfileView launched(const Launch& launch, double time_ns = 10e6) {
  ProfileView v = with_root();
  v.devices.push_back(h100());
  int32_t k = kernel(v, v.add_node(0, "step"), "k", 10, time_ns);
  set_launch(v, k, launch);
  return v;
}

inline std::vector<const Finding*> of_rule(const std::vector<Finding>& all, const std::string& r) {
  std::vector<const Finding*> out;
  for (const Finding& f : all) {
    if (f.rule == r) out.push_back(&f);
  }
  return out;
}

}  // namespace proton::analysis::testing
