#include "viewer/cli_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "viewer/errors.h"

namespace proton::viewer {

const char* const kViewHelp = R"(usage: proton-viewer [options] PROFILE...
       proton-viewer merge PROFILE... -o OUT [--output-format hatchet|trace]

Shows a Hatchet profile written by Proton or triton.profiler as a call tree.

options:
  -h, --help            show this help and exit
  -l, --list            list the profile's metrics and the metrics derivable from them.
                        Metric names are case insensitive and ignore units.
  -m, --metrics LIST    metrics to show, comma separated (default: time/ms when the profile
                        has time, else its first metric, named on stderr; a profile without
                        metrics shows its frames). Raw metrics by name, or derived:
                          time/s, time/ms, time/us, time/ns       time (any metric with a
                                                                  time unit converts too)
                          avg_time/<unit>, cpu_time/<unit>, avg_cpu_time/<unit>
                          flop[8|16|32|64]/s, gflop.../s, tflop.../s  flops / time
                          byte/s, gbyte/s, tbyte/s                 bytes / time
                          util      max(flops / peak flops, bytes / peak bandwidth) / time
                          <metric>/%   percent of the root (of the sum for exclusive ones)
  -i, --include REGEX   keep only call paths through frames matching REGEX
  -e, --exclude REGEX   remove frames matching REGEX; their children move up
  -t, --threshold X     hide frames whose first metric is below X
  -d, --depth N         show N levels below the root (default 100)
  -f, --format FMT      frame names: full, file_function_line, function_line, file_function
                        (also accepts an output format below, as a shorthand)
  --print-sorted        after the tree, list frames sorted by the first metric
  --source KERNEL       PC sampling: KERNEL's source lines with samples and top stall
                        reasons, like perf annotate (profiles of mode="pcsampling")
  --diff-profile OTHER  show PROFILE minus OTHER, aligned by call path (also -diff)
  --output-format FMT   tree (default), folded (flamegraph.pl), speedscope (JSON for
                        speedscope.app), html (self-contained interactive flame graph) or
                        json (the shown tree: names, full names and every -m column)
  -o, --output FILE     write there instead of standard output
  --full-names          show demangled kernel names whole instead of shortened
  --show-metadata       keep Triton launch-hook metadata frames (hidden by default)
  --stragglers[=N]      with several profiles (ranks): the N (10) frames where the slowest
                        rank is furthest above the mean, and which ranks (docs/multiprocess.md);
                        ranks by the first -m metric, else by time, else the first metric
  --advise[=N]          ranked findings (docs/advise.md): where time goes to waste, the
                        evidence, the time at stake and what to try; the first N (10), then
                        what more the profile would need. With --format json: every finding
                        as a JSON list. Rank files are merged first; -i/-e narrow it to some
                        call paths
  --color, --no-color   force or disable colours (default: on a terminal, unless NO_COLOR)
  --version             print the version and exit

Several profiles (NAME.rank*.hatchet) are merged by call path and shown as one tree: each
metric is the sum over ranks, followed by an imbalance column (max / mean over the ranks that
ran the frame). Files that cannot be merged are left out with a warning naming them.

exit status: 0 ok, 1 unreadable profile (file:byte-offset: reason), 2 bad options.
)";

const char* const kMergeHelp =
    R"(usage: proton-viewer merge PROFILE... -o OUT [--output-format hatchet|trace]

Merges profiles of one program (one per rank, say) into one tree aligned by call path.
Each metric M becomes: M (sum over inputs), M:mean, M:min, M:max (over the inputs'
inclusive values; an input lacking a frame counts as 0), M:argmax (the rank holding the
max: the rank the file records, else its position), M:imbalance (max / mean over the
ranks that have the frame) and "ranks" (how many ranks have it). Files that cannot be merged
(unreadable, another program, another Proton version, a rank given twice) are left out with a
warning; the rest is still written. Example: proton-viewer -m time:max/ms,time:argmax OUT

  --output-format trace   merge per-rank Chrome traces (NAME.rank*.chrome_trace) into one
                          Perfetto file, one process track per rank, clocks aligned on the
                          hosts' wall clock at each trace's start (docs/multiprocess.md)
)";

namespace {

class ArgReader {
 public:
  explicit ArgReader(const std::vector<std::string>& args) : args_(args) {}

  bool done() const { return index_ >= args_.size(); }
  const std::string& next() { return args_[index_++]; }

  // For "--name=value", "--name value", "-xvalue" and "-x value".
  std::string value_for(const std::string& option, const std::string& inline_value,
                        bool has_inline) {
    if (has_inline) return inline_value;
    if (done()) throw UsageError("option " + option + " needs a value");
    return next();
  }

 private:
  const std::vector<std::string>& args_;
  size_t index_ = 0;
};

double parse_double(const std::string& option, const std::string& text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value)) {
    throw UsageError("option " + option + " needs a number, got '" + text + "'");
  }
  return value;
}

int parse_int(const std::string& option, const std::string& text) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    throw UsageError("option " + option + " needs a non-negative integer, got '" + text + "'");
  }
  return value;
}

std::optional<OutputFormat> parse_output_format(const std::string& text) {
  if (text == "tree") return OutputFormat::kTree;
  if (text == "folded") return OutputFormat::kFolded;
  if (text == "speedscope") return OutputFormat::kSpeedscope;
  if (text == "html") return OutputFormat::kHtml;
  if (text == "json") return OutputFormat::kJson;
  return std::nullopt;
}

void split_metrics(const std::string& list, std::vector<std::string>& out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    if (item.find_first_not_of(' ') != std::string::npos) out.push_back(item);
    start = comma + 1;
  }
}

// Splits "--name=value" / "-xvalue" into the option and its inline value.
struct Token {
  std::string option;
  std::string value;
  bool has_value = false;
};

Token split_token(const std::string& arg) {
  Token token{arg, "", false};
  if (arg.starts_with("--")) {
    if (auto eq = arg.find('='); eq != std::string::npos) {
      token = {arg.substr(0, eq), arg.substr(eq + 1), true};
    }
  } else if (arg.size() > 2 && arg[0] == '-' && arg != "-diff") {
    token = {arg.substr(0, 2), arg.substr(2), true};
  }
  return token;
}

}  // namespace

ViewOptions parse_view_options(const std::vector<std::string>& args) {
  ViewOptions options;
  std::vector<std::string> positional;
  ArgReader reader(args);
  while (!reader.done()) {
    const std::string& arg = reader.next();
    if (arg == "--") {
      while (!reader.done())
        positional.push_back(reader.next());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    Token t = split_token(arg);
    auto value = [&] { return reader.value_for(t.option, t.value, t.has_value); };
    const std::string& o = t.option;
    bool flag = !t.has_value || o.starts_with("--");
    if ((o == "-h" || o == "--help") && flag) {
      options.help = true;
    } else if ((o == "-l" || o == "--list") && flag) {
      options.list = true;
    } else if (o == "--version") {
      options.version = true;
    } else if (o == "-m" || o == "--metrics") {
      split_metrics(value(), options.metrics);
    } else if (o == "-i" || o == "--include") {
      options.include = value();
    } else if (o == "-e" || o == "--exclude") {
      options.exclude = value();
    } else if (o == "-t" || o == "--threshold") {
      options.threshold = parse_double(o, value());
    } else if (o == "-d" || o == "--depth") {
      options.depth = parse_int(o, value());
    } else if (o == "-f" || o == "--format") {
      std::string text = value();
      if (auto frame = parse_frame_format(text)) {
        options.frame_format = *frame;
      } else if (auto output = parse_output_format(text)) {
        options.output = *output;
      } else {
        throw UsageError("option " + o + ": unknown format '" + text +
                         "' (full, file_function_line, function_line, file_function, or an "
                         "output format: tree, folded, speedscope, html, json)");
      }
    } else if (o == "--output-format") {
      std::string text = value();
      auto output = parse_output_format(text);
      if (!output) {
        throw UsageError("--output-format: unknown format '" + text +
                         "' (tree, folded, speedscope, html, json)");
      }
      options.output = *output;
    } else if (o == "-o" || o == "--output") {
      options.output_path = value();
    } else if ((o == "--print-sorted" || o == "--print_sorted") && !t.has_value) {
      options.print_sorted = true;
    } else if (o == "--diff-profile" || o == "--diff_profile" || o == "-diff") {
      options.diff_profile = value();
    } else if (o == "--color" && !t.has_value) {
      options.color = ColorMode::kAlways;
    } else if (o == "--no-color" && !t.has_value) {
      options.color = ColorMode::kNever;
    } else if (o == "--full-names" && !t.has_value) {
      options.full_names = true;
    } else if (o == "--show-metadata" && !t.has_value) {
      options.show_metadata = true;
    } else if (o == "--stragglers") {
      options.stragglers =
          t.has_value ? static_cast<size_t>(std::max(1, parse_int(o, t.value))) : size_t{10};
    } else if (o == "--source") {
      options.source = value();
    } else if (o == "--advise") {
      options.advise =
          t.has_value ? static_cast<size_t>(std::max(1, parse_int(o, t.value))) : size_t{10};
    } else {
      throw UsageError("unknown option '" + arg + "' (see --help)");
    }
  }
  if (options.help || options.version) return options;
  if (positional.empty()) throw UsageError("no profile given (see --help)");
  if (positional.size() > 1 && options.diff_profile) {
    throw UsageError("--diff-profile compares one profile with another; got " +
                     std::to_string(positional.size()) + " profiles");
  }
  options.file = positional[0];
  options.files = positional;
  return options;
}

MergeOptions parse_merge_options(const std::vector<std::string>& args) {
  MergeOptions options;
  ArgReader reader(args);
  while (!reader.done()) {
    const std::string& arg = reader.next();
    Token t = split_token(arg);
    if (arg == "-h" || arg == "--help") {
      options.help = true;
    } else if (t.option == "-o" || t.option == "--output") {
      options.output_path = reader.value_for(t.option, t.value, t.has_value);
    } else if (t.option == "--output-format" || t.option == "-f") {
      std::string format = reader.value_for(t.option, t.value, t.has_value);
      if (format != "hatchet" && format != "trace" && format != "chrome_trace") {
        throw UsageError("merge: --output-format: unknown format '" + format +
                         "' (hatchet, or trace for Chrome traces)");
      }
      options.trace = format != "hatchet";
    } else if (arg.size() > 1 && arg[0] == '-') {
      throw UsageError("merge: unknown option '" + arg + "'");
    } else {
      options.inputs.push_back(arg);
    }
  }
  if (options.help) return options;
  if (options.inputs.empty()) throw UsageError("merge: no profiles given");
  if (options.output_path.empty()) throw UsageError("merge: -o OUT is required");
  return options;
}

}  // namespace proton::viewer
