// Parsing of proton-viewer's options, which mirror Triton's viewer (argparse) so existing
// command lines keep working: -m a,b, --print_sorted, -diff FILE, --opt=value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "viewer/frame_names.h"

namespace proton::viewer {

enum class OutputFormat { kTree, kFolded, kSpeedscope, kHtml, kJson };
enum class ColorMode { kAuto, kAlways, kNever };

struct ViewOptions {
  std::string file;
  bool list = false;
  bool help = false;
  bool version = false;
  std::vector<std::string> metrics;
  std::optional<std::string> include;
  std::optional<std::string> exclude;
  std::optional<double> threshold;
  int depth = 100;
  FrameFormat frame_format = FrameFormat::kFull;
  bool print_sorted = false;
  std::optional<std::string> diff_profile;
  OutputFormat output = OutputFormat::kTree;
  std::string output_path;  // empty: stdout
  ColorMode color = ColorMode::kAuto;
  bool full_names = false;
  bool show_metadata = false;
  // Several profiles (one per rank): shown merged (rank_merge.h); files[0] == file.
  std::vector<std::string> files;
  std::optional<size_t> stragglers;   // --stragglers[=N]: the N most imbalanced frames
  std::optional<std::string> source;  // --source KERNEL: annotated source (source_view.h)
  std::optional<size_t> advise;       // --advise[=N]: the analyzer's N first findings
};

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output_path;
  bool help = false;
  bool trace = false;  // --output-format trace: merge Chrome traces (trace_merge.h)
};

// Both throw UsageError with a message naming the bad option.
ViewOptions parse_view_options(const std::vector<std::string>& args);
MergeOptions parse_merge_options(const std::vector<std::string>& args);

extern const char* const kViewHelp;
extern const char* const kMergeHelp;

}  // namespace proton::viewer
