// `proton._proton.ProfileData`: the viewer's C++ reader and derived metrics, for
// python/proton/profiles.py. Translation only: parsing, hiding of launch-metadata frames, frame
// names, roll-ups and derivations are the viewer's own code, so Python sees exactly the frames,
// names and numbers `proton-viewer -m` shows.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/json_cursor.h"
#include "viewer/advise_view.h"
#include "viewer/derived_metrics.h"
#include "viewer/errors.h"
#include "viewer/frame_names.h"
#include "viewer/hatchet_reader.h"
#include "viewer/profile.h"
#include "viewer/tree_filter.h"

namespace nb = nanobind;

namespace proton {

namespace {

using viewer::Profile;

// The reader's errors become ValueError with the viewer's own text ("path:offset: reason").
template <typename F>
auto translating(F&& f) {
  try {
    return f();
  } catch (const viewer::FileError& e) {
    throw nb::value_error(e.what());
  } catch (const viewer::InputError& e) {
    throw nb::value_error((std::to_string(e.offset()) + ": " + e.what()).c_str());
  } catch (const viewer::UsageError& e) {
    throw nb::key_error(e.what());
  }
}

const char* kind_name(viewer::MetricKind kind) {
  switch (kind) {
    case viewer::MetricKind::kExclusive:
      return "exclusive";
    case viewer::MetricKind::kProperty:
      return "property";
    default:
      return "inclusive";
  }
}

// The tree as the viewer shows it without --show-metadata.
Profile shown(Profile profile, bool show_metadata) {
  return show_metadata ? std::move(profile) : viewer::hide_metadata(std::move(profile));
}

void check_metric(const Profile& p, int32_t metric) {
  if (metric < 0 || static_cast<size_t>(metric) >= p.metrics.size())
    throw nb::index_error("metric index out of range");
}

}  // namespace

void register_profiles(nb::module_& m) {
  nb::class_<Profile>(m, "ProfileData")
      .def_static(
          "load",
          [](const std::string& path, bool show_metadata) {
            return translating([&] { return shown(viewer::load_hatchet(path), show_metadata); });
          },
          nb::arg("path"), nb::arg("show_metadata") = false)
      .def_static(
          "parse",
          [](nb::bytes text, bool show_metadata) {
            return translating([&] {
              return shown(viewer::parse_hatchet(std::string_view(text.c_str(), text.size())),
                           show_metadata);
            });
          },
          nb::arg("text"), nb::arg("show_metadata") = false)
      .def("__len__", [](const Profile& p) { return p.nodes.size(); })
      .def("names",
           [](const Profile& p) {
             std::vector<std::string> out;
             out.reserve(p.nodes.size());
             for (const auto& n : p.nodes)
               out.push_back(n.name);
             return out;
           })
      // Frame names as the viewer prints them: demangled C++ names shortened (`full`: whole),
      // control bytes replaced. names() keeps the file's own spelling.
      .def("display_names",
           [](const Profile& p, bool full) {
             viewer::NameOptions options;
             options.full_names = full;
             std::vector<std::string> out;
             out.reserve(p.nodes.size());
             for (const auto& n : p.nodes)
               out.push_back(viewer::display_name(n.name, options));
             return out;
           })
      .def("types",
           [](const Profile& p) {
             std::vector<std::string> out;
             out.reserve(p.nodes.size());
             for (const auto& n : p.nodes)
               out.push_back(n.type);
             return out;
           })
      .def("parents",
           [](const Profile& p) {
             std::vector<int32_t> out;
             out.reserve(p.nodes.size());
             for (const auto& n : p.nodes)
               out.push_back(n.parent);
             return out;
           })
      .def("text",
           [](const Profile& p, size_t node) {
             if (node >= p.nodes.size()) throw nb::index_error("node index out of range");
             return p.nodes[node].text;
           })
      // [(name, kind, integral)], in the order of the metric indices.
      .def("metrics",
           [](const Profile& p) {
             nb::list out;
             for (const auto& info : p.metrics)
               out.append(nb::make_tuple(info.name, kind_name(info.kind), info.integral));
             return out;
           })
      .def("stored",
           [](const Profile& p, int32_t metric) {
             check_metric(p, metric);
             return p.stored(metric);
           })
      .def("inclusive",
           [](const Profile& p, int32_t metric) {
             check_metric(p, metric);
             return p.inclusive(metric);
           })
      .def("default_metric", [](const Profile& p) { return viewer::default_metric(p); })
      // [(header, values, integral)] per request, plus the viewer's warnings.
      .def("derive",
           [](const Profile& p, const std::vector<std::string>& requests) {
             std::vector<std::string> warnings;
             std::vector<viewer::Column> columns =
                 translating([&] { return viewer::derive_columns(p, requests, warnings); });
             nb::list out;
             for (auto& c : columns)
               out.append(nb::make_tuple(c.header, std::move(c.values), c.integral));
             return std::make_pair(out, warnings);
           })
      // The analyzer's findings (docs/advise.md): a JSON list, or the text --advise prints.
      .def("advise",
           [](const Profile& p, bool json, size_t top, const std::string& title) {
             return viewer::advise_report(p, title, json, top);
           })
      .def("devices", [](const Profile& p) {
        nb::list out;
        for (const auto& d : p.devices) {
          nb::dict e;
          e["type"] = d.type;
          e["id"] = d.id;
          e["arch"] = d.arch;
          e["num_sms"] = d.num_sms;
          e["clock_rate"] = d.clock_rate_khz;
          e["memory_clock_rate"] = d.memory_clock_rate_khz;
          e["bus_width"] = d.bus_width_bits;
          if (d.max_threads_per_sm > 0) {  // the SM's limits, in files that record them
            e["warp_size"] = d.warp_size;
            e["max_threads_per_sm"] = d.max_threads_per_sm;
            e["max_warps_per_sm"] = d.max_warps_per_sm;
            e["max_blocks_per_sm"] = d.max_blocks_per_sm;
            e["registers_per_sm"] = d.registers_per_sm;
            e["shared_memory_per_sm"] = d.shared_memory_per_sm;
            e["reserved_shared_memory_per_block"] = d.reserved_shared_memory_per_block;
          }
          out.append(e);
        }
        return out;
      });
}

}  // namespace proton
