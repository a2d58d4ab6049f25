// `proton-viewer --source KERNEL profile`: a kernel's source lines with their PC samples and
// top stall reasons, like `perf annotate`, from a mode="pcsampling" profile.
//
// Samples are summed over every call path that ran a kernel whose name contains KERNEL: one
// table per source file (the file is read when it exists on this machine, so lines without
// samples show too, with their text), then the PC ranges of code without line information.
// Stall reasons are also grouped into families (format/pc_stall_reasons.h).
#pragma once

#include <string>
#include <vector>

#include "viewer/profile.h"

namespace proton::viewer {

/// One source location of a kernel, summed over call paths.
struct SourceLine {
  std::string file;  // "" for a PC range
  int line = 0;
  std::string location;  // the node name: "file:line@function" or "pc:0x..@function"
  double samples = 0;
  double stalled = 0;
  std::vector<std::pair<std::string, double>> stalls;  // reason (no "stalled_") -> samples
};

struct KernelSource {
  std::string kernel;
  int call_paths = 0;
  double samples = 0;
  double stalled = 0;
  std::vector<SourceLine> lines;                         // by file, then line
  std::vector<std::pair<std::string, double>> families;  // family -> samples, largest first
};

/// The kernels whose names contain `kernel` and carry samples. Throws UsageError when none.
std::vector<KernelSource> collect_source(const Profile& profile, const std::string& kernel);

/// The annotated listing. `read_files`: show the source text of files that exist here.
std::string render_source(const std::vector<KernelSource>& kernels, bool read_files);

}  // namespace proton::viewer
