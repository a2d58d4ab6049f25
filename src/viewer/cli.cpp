#include "viewer/cli.h"

#include <cmath>
#include <sstream>

#include "analysis/advise.h"
#include "analysis/rank_stats.h"
#include "common/version.h"
#include "viewer/advise_view.h"
#include "viewer/cli_options.h"
#include "viewer/derived_metrics.h"
#include "viewer/diff.h"
#include "viewer/errors.h"
#include "viewer/flame_export.h"
#include "viewer/hatchet_reader.h"
#include "viewer/html_export.h"
#include "viewer/json_export.h"
#include "viewer/merge.h"
#include "viewer/profile_writer.h"
#include "viewer/rank_file.h"
#include "viewer/rank_merge.h"
#include "viewer/source_view.h"
#include "viewer/stragglers.h"
#include "viewer/text_render.h"
#include "viewer/trace_merge.h"
#include "viewer/tree_filter.h"

namespace proton::viewer {

namespace {

struct Prepared {
  Profile tree;
  std::vector<Column> columns;
};

// Load, hide metadata, apply -i/-e, then derive the requested columns (inclusive values are
// recomputed on the filtered tree, as Triton's squash does).
Prepared prepare_profile(Profile profile, const ViewOptions& options,
                         std::vector<std::string>& requests, std::vector<std::string>& warnings) {
  Prepared p;
  p.tree = std::move(profile);
  if (!options.show_metadata) p.tree = hide_metadata(std::move(p.tree));
  if (options.include) {
    p.tree = include_paths(std::move(p.tree), NamePattern(*options.include, "-i"));
  }
  if (options.exclude) {
    p.tree = exclude_frames(std::move(p.tree), NamePattern(*options.exclude, "-e"));
  }
  if (requests.empty()) {
    if (auto metric = default_metric(p.tree)) requests.push_back(*metric);
  }
  p.columns = derive_columns(p.tree, requests, warnings);
  return p;
}

// Loads and prepares one file. When two files are in play (a diff) a metric one of them lacks
// is reported with that file's path.
Prepared prepare(const std::string& path, bool name_path, const ViewOptions& options,
                 std::vector<std::string>& requests, std::vector<std::string>& warnings) {
  Profile profile = load_hatchet(path);
  try {
    return prepare_profile(std::move(profile), options, requests, warnings);
  } catch (const UsageError& e) {
    if (!name_path) throw;
    throw UsageError(path + ": " + e.what());
  }
}

// Without -m the viewer picks the metric itself; anything but time is named on stderr so the
// numbers are never read as something else.
void note_default_metric(const std::string& metric, std::ostream& err) {
  if (metric == "time/ms") return;
  err << "proton-viewer: no time in the profile; showing '" << metric
      << "', its first metric (-m chooses, -l lists)\n";
}

// Streams `paths` through a RankMerger (rank_merge.h). Files that cannot be read or merged are
// left out with a warning naming them and counted in `left_out`; throws FileError when none can
// be merged.
RankMerger merge_files(const std::vector<std::string>& paths, std::vector<std::string>& warnings,
                       bool presence, size_t& left_out) {
  RankMerger merger;
  if (presence) merger.track_presence();
  // One text buffer and one parsed file, reused for every input: memory stays one input's.
  std::string text;
  RankFile file;
  for (const auto& path : paths) {
    std::string why;
    try {
      read_file_into(path, text);
      parse_file_text(path, text, [&file](std::string_view t) { parse_rank_file(t, file); });
      if (!merger.add_file(file, path, why)) {
        warnings.push_back(why);
        ++left_out;
      }
    } catch (const FileError& e) {
      warnings.push_back(std::string(e.what()) + " (left out of the merge)");
      ++left_out;
    }
  }
  if (merger.size() == 0) {
    throw FileError("proton-viewer: none of the " + std::to_string(paths.size()) +
                    " profiles could be merged");
  }
  for (auto& w : merger.set_warnings())
    warnings.push_back(std::move(w));
  return merger;
}

// The raw metric a request is about: "time/ms" -> "time", "avg_time/us" -> "time".
std::string base_request(std::string request) {
  auto slash = request.find('/');
  if (slash != std::string::npos) request.resize(slash);
  if (request.starts_with("avg_")) request = request.substr(4);
  return request;
}

// The imbalance column (max / mean over ranks with the frame) of the first column's metric.
void add_imbalance_column(const Profile& tree, const std::string& request,
                          std::vector<Column>& columns) {
  int32_t base = match_metric(tree, base_request(request));
  if (base < 0) return;
  int32_t id = tree.find_metric(
      analysis::rank_stat_metric(tree.metrics[static_cast<size_t>(base)].name, "imbalance"));
  if (id < 0) return;
  Column c;
  c.header = "imbalance";
  c.values = tree.stored(id);
  columns.push_back(std::move(c));
  // Frames some ranks never ran: a "ranks" column says how many did (only when it varies).
  int32_t ranks = tree.find_metric("ranks (exc)");
  if (ranks < 0) return;
  std::vector<double> count = tree.stored(ranks);
  bool varies = false;
  for (double v : count)
    varies |= !is_absent(v) && v != count[0];
  if (!varies) return;
  Column r;
  r.header = "ranks";
  r.values = std::move(count);
  r.integral = true;
  columns.push_back(std::move(r));
}

void profile_warnings(const Profile& profile, const std::string& path,
                      std::vector<std::string>& warnings) {
  if (profile.nodes.empty()) return;
  for (const char* name : {"dropped_records", "unattributed_kernels"}) {
    int32_t m = profile.find_metric(name);
    if (m < 0) continue;
    double v = profile.stored(m)[0];
    if (v > 0) {
      warnings.push_back(path + ": " + format_value(v, true) + " " + name +
                         (std::string(name) == "dropped_records"
                              ? " (activity buffers overflowed; totals are undercounts)"
                              : " (kernels without a calling context)"));
    }
  }
  int32_t bytes = profile.find_metric("bytes");
  if (bytes >= 0) {
    for (double v : profile.stored(bytes)) {
      if (v < 0) {
        warnings.push_back(path +
                           ": negative byte counts, usually an integer overflow in the "
                           "kernel's launch metadata");
        break;
      }
    }
  }
}

void list_metrics(std::ostream& out, const Profile& profile) {
  const char* titles[] = {
      "Available inclusive metrics:", "Available exclusive metrics:", "Available properties:"};
  for (auto kind : {MetricKind::kInclusive, MetricKind::kExclusive, MetricKind::kProperty}) {
    out << titles[static_cast<int>(kind)] << "\n";
    for (const auto& m : profile.metrics) {
      if (m.kind == kind)
        out << "- " << terminal_safe(m.name) << (m.from_array ? " [array, shown as sum]" : "")
            << "\n";
    }
  }
  std::vector<std::string> derived;
  auto has = [&](const char* name) { return match_metric(profile, name) >= 0; };
  if (has("time")) {
    derived.push_back("time/s, time/ms, time/us, time/ns, time/%");
    if (has("count")) derived.push_back("avg_time/s, avg_time/ms, avg_time/us, avg_time/ns");
    bool flops = has("flops");
    for (int w : {8, 16, 32, 64}) {
      std::string name = "flops" + std::to_string(w);
      if (has(name.c_str())) {
        flops = true;
        std::string s = std::to_string(w);
        derived.push_back("flop" + s + "/s, gflop" + s + "/s, tflop" + s + "/s");
      }
    }
    if (flops) derived.push_back("flop/s, gflop/s, tflop/s");
    if (has("bytes")) derived.push_back("byte/s, gbyte/s, tbyte/s");
    if (flops || has("bytes")) derived.push_back("util");
  }
  if (has("cpu_time")) {
    derived.push_back("cpu_time/s, cpu_time/ms, cpu_time/us, cpu_time/ns");
    if (has("cpu_calls") || has("count")) {
      derived.push_back("avg_cpu_time/s, avg_cpu_time/ms, avg_cpu_time/us, avg_cpu_time/ns");
    }
  }
  derived.push_back("<metric>/% for any metric above");
  out << "Derived metrics:\n";
  for (const auto& d : derived)
    out << "- " << d << "\n";
  if (!profile.devices.empty()) {
    out << "Devices:\n";
    for (const auto& d : profile.devices) {
      out << "- " << terminal_safe(d.type) << " " << terminal_safe(d.id) << ": arch "
          << terminal_safe(d.arch) << ", " << format_value(d.num_sms, true) << " SMs\n";
    }
  }
}

std::vector<char> depth_mask(const Profile& tree, int max_depth, std::vector<char> visible) {
  std::vector<int> depth(tree.nodes.size(), 0);
  for (size_t i = 1; i < tree.nodes.size(); ++i) {
    depth[i] = depth[static_cast<size_t>(tree.nodes[i].parent)] + 1;
    if (depth[i] > max_depth || !visible[static_cast<size_t>(tree.nodes[i].parent)]) visible[i] = 0;
  }
  return visible;
}

std::string basename(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// --advise: the analyzer's findings (advise_view.h) on one profile or the merge of several.
int run_advise(const ViewOptions& options, std::ostream& out, std::ostream& err) {
  if (options.output != OutputFormat::kTree && options.output != OutputFormat::kJson) {
    throw UsageError("--advise writes text or --format json");
  }
  std::vector<std::string> warnings;
  Profile profile;
  std::string title = options.file;
  if (options.files.size() > 1) {
    size_t left_out = 0;
    RankMerger merger = merge_files(options.files, warnings, false, left_out);
    profile = merger.result();
    title = "the merge of " + std::to_string(merger.size()) + " profiles";
  } else {
    profile = load_hatchet(options.file);
  }
  // -i/-e narrow the analysis to some call paths, as they narrow the tree.
  if (options.include) {
    profile = include_paths(std::move(profile), NamePattern(*options.include, "-i"));
  }
  if (options.exclude) {
    profile = exclude_frames(std::move(profile), NamePattern(*options.exclude, "-e"));
  }
  NameOptions names{options.frame_format, options.full_names};
  std::string text = advise_report(std::move(profile), title, options.output == OutputFormat::kJson,
                                   *options.advise, names);
  if (options.output_path.empty()) {
    out << text;
  } else {
    write_file_atomically(options.output_path, text);
  }
  for (const auto& w : warnings)
    err << "proton-viewer: warning: " << w << "\n";
  return 0;
}

int run_view(const ViewOptions& options, std::ostream& out, std::ostream& err,
             const Terminal& terminal) {
  std::vector<std::string> warnings;
  if (options.list) {
    Profile profile = load_hatchet(options.file);
    list_metrics(out, profile);
    return 0;
  }
  if (options.source) {  // PC sampling's annotated source (source_view.h)
    std::string text =
        render_source(collect_source(load_hatchet(options.file), *options.source), true);
    if (options.output_path.empty()) {
      out << text;
    } else {
      write_file_atomically(options.output_path, text);
    }
    return 0;
  }
  if (options.advise) return run_advise(options, out, err);
  std::vector<std::string> requests = options.metrics;
  bool ranks = options.files.size() > 1 || options.stragglers.has_value();
  Prepared main;
  if (ranks) {
    size_t left_out = 0;
    RankMerger merger =
        merge_files(options.files, warnings, options.stragglers.has_value(), left_out);
    Profile merged = merger.result();
    profile_warnings(merged, "the merge of " + std::to_string(merger.size()) + " files", warnings);
    if (options.stragglers) {
      StragglerOptions so;
      if (requests.empty()) {
        if (auto metric = default_metric(merged)) requests.push_back(*metric);
        if (requests.empty()) throw UsageError("--stragglers: the profiles have no metrics");
        note_default_metric(requests[0], err);
      }
      so.metric = base_request(requests[0]);
      so.top = *options.stragglers;
      so.names = NameOptions{options.frame_format, options.full_names};
      std::ostringstream text;
      render_stragglers(text, merger, merged, so);
      out << text.str();
      for (const auto& w : warnings)
        err << "proton-viewer: warning: " << w << "\n";
      return 0;
    }
    main = prepare_profile(std::move(merged), options, requests, warnings);
    if (options.output == OutputFormat::kTree && !requests.empty())
      add_imbalance_column(main.tree, requests[0], main.columns);
  } else {
    main = prepare(options.file, options.diff_profile.has_value(), options, requests, warnings);
    profile_warnings(main.tree, options.file, warnings);
  }
  if (options.metrics.empty() && !requests.empty()) note_default_metric(requests[0], err);
  Profile tree = std::move(main.tree);
  std::vector<Column> columns = std::move(main.columns);
  std::vector<uint8_t> presence;
  if (options.diff_profile) {
    Prepared other = prepare(*options.diff_profile, true, options, requests, warnings);
    profile_warnings(other.tree, *options.diff_profile, warnings);
    DiffResult diff = diff_profiles(tree, columns, other.tree, other.columns);
    tree = std::move(diff.tree);
    columns = std::move(diff.columns);
    presence = std::move(diff.presence);
  }
  std::vector<char> visible(tree.nodes.size(), 1);
  if (columns.empty() && options.threshold) {
    throw UsageError("-t needs a metric, and the profile has none");
  }
  bool flame = options.output != OutputFormat::kTree && options.output != OutputFormat::kJson;
  if (columns.empty() && flame) {
    throw UsageError("a flame graph needs a metric, and the profile has none");
  }
  if (options.threshold) {
    visible =
        threshold_mask(tree, columns[0], *options.threshold, options.diff_profile.has_value());
  }
  NameOptions names{options.frame_format, options.full_names};
  std::string title = basename(options.file);
  std::ostringstream text;
  if (options.output == OutputFormat::kTree) {
    RenderOptions render;
    render.names = names;
    render.max_depth = options.depth;
    render.print_sorted = options.print_sorted;
    render.visible = &visible;
    bool tty = options.output_path.empty() && terminal.stdout_is_tty && !terminal.no_color_env;
    render.color =
        options.color == ColorMode::kAlways || (options.color == ColorMode::kAuto && tty);
    if (options.diff_profile) {
      render.diff = true;
      render.presence = &presence;
      render.main_label = basename(options.file);
      render.other_label = basename(*options.diff_profile);
      if (render.main_label == render.other_label) {
        render.main_label = options.file;
        render.other_label = *options.diff_profile;
      }
    }
    render_tree(text, tree, columns, render);
  } else {
    if (options.diff_profile) throw UsageError("--diff-profile only works with the tree output");
    visible = depth_mask(tree, options.depth, std::move(visible));
    if (options.output == OutputFormat::kJson) {
      text << to_json_tree(tree, columns, visible, names);
    } else if (!columns[0].additive) {
      throw UsageError("a flame graph needs an additive first metric such as time/ms or count; '" +
                       columns[0].header + "' is a rate, ratio or exclusive value");
    } else if (options.output == OutputFormat::kFolded) {
      text << to_folded(tree, columns[0], visible, names);
    } else if (options.output == OutputFormat::kSpeedscope) {
      text << to_speedscope(tree, columns[0], visible, names, title);
    } else {
      // The analyzer's findings (--advise) on the tree as shown, beside the graph.
      text << to_html(tree, columns[0], visible, names, title,
                      analysis::advise(analysis_view(tree, names)));
    }
  }
  if (options.output_path.empty()) {
    out << text.str();
  } else {
    write_file_atomically(options.output_path, text.str());
  }
  for (const auto& w : warnings)
    err << "proton-viewer: warning: " << w << "\n";
  return 0;
}

int run_merge(const MergeOptions& options, std::ostream& out, std::ostream& err) {
  if (options.trace) {
    TraceMergeResult r = merge_traces(options.inputs, options.output_path);
    out << "merged " << r.merged << (r.merged == 1 ? " trace" : " traces") << " into "
        << options.output_path << " (one process track per rank)\n";
    for (const auto& n : r.notes)
      out << "  " << n << "\n";
    for (const auto& w : r.left_out)
      err << "proton-viewer: warning: " << w << " (left out of the merge)\n";
    // The merge was written, but not of everything asked for: scripts must notice.
    return r.left_out.empty() ? 0 : 1;
  }
  std::vector<std::string> warnings;
  size_t left_out = 0;
  RankMerger merger = merge_files(options.inputs, warnings, false, left_out);
  merger.write_json(options.output_path);
  out << "merged " << merger.size() << (merger.size() == 1 ? " profile" : " profiles") << " into "
      << options.output_path << "\n";
  for (size_t k = 0; k < merger.size(); ++k) {
    out << "  input " << k << " (rank " << merger.ranks()[k] << "): " << merger.labels()[k] << "\n";
  }
  for (const auto& w : warnings)
    err << "proton-viewer: warning: " << w << "\n";
  return left_out == 0 ? 0 : 1;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            const Terminal& terminal) {
  try {
    if (!args.empty() && args[0] == "merge") {
      MergeOptions options = parse_merge_options({args.begin() + 1, args.end()});
      if (options.help) {
        out << kMergeHelp;
        return 0;
      }
      return run_merge(options, out, err);
    }
    ViewOptions options = parse_view_options(args);
    if (options.help) {
      out << kViewHelp;
      return 0;
    }
    if (options.version) {
      out << "proton-viewer " << kProtonVersion << "\n";
      return 0;
    }
    return run_view(options, out, err, terminal);
  } catch (const UsageError& e) {
    err << "proton-viewer: error: " << e.what() << "\n";
    return 2;
  } catch (const FileError& e) {
    err << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    // Nothing should reach here; report rather than abort so scripts still see a reason.
    err << "proton-viewer: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace proton::viewer
