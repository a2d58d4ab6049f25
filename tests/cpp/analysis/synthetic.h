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
  return d;
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

inline std::vector<const Finding*> of_rule(const std::vector<Finding>& all, const std::string& r) {
  std::vector<const Finding*> out;
  for (const Finding& f : all) {
    if (f.rule == r) out.push_back(&f);
  }
  return out;
}

}  // namespace proton::analysis::testing
