#include "backends/cupti/library_search.h"

#include <algorithm>

namespace proton::cupti {

namespace {

std::string join(const std::string& dir, const std::string& rest) {
  if (dir.empty()) return rest;
  if (dir.back() == '/') return dir + rest;
  return dir + "/" + rest;
}

void add(std::vector<std::string>& out, std::string path) {
  if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
}

void add_dir(std::vector<std::string>& out, const std::string& dir) {
  for (const std::string& name : cupti_file_names())
    add(out, join(dir, name));
}

bool looks_like_library(const std::string& path) {
  return path.find(".so") != std::string::npos;
}

}  // namespace

const std::vector<std::string>& cupti_file_names() {
  static const std::vector<std::string> names = {"libcupti.so", "libcupti.so.13", "libcupti.so.12"};
  return names;
}

std::vector<std::string> cupti_candidates(const LibrarySearch& search) {
  std::vector<std::string> out;
  if (!search.override_path.empty()) {
    // A path naming a library file is taken as is; anything else is a folder.
    if (looks_like_library(search.override_path)) {
      add(out, search.override_path);
    } else {
      add_dir(out, search.override_path);
    }
  }
  for (const std::string& dir : search.extra_dirs)
    add_dir(out, dir);
  for (const std::string& root : search.cuda_roots) {
    add_dir(out, join(root, "extras/CUPTI/lib64"));
    add_dir(out, join(root, "lib64"));
  }
  std::vector<std::string> roots = search.extra_dirs;
  roots.insert(roots.end(), search.python_roots.begin(), search.python_roots.end());
  for (const std::string& root : roots) {
    add_dir(out, join(root, "nvidia/cu13/lib"));
    add_dir(out, join(root, "nvidia/cuda_cupti/lib"));
  }
  for (const std::string& root : roots)
    add_dir(out, join(root, "triton/backends/nvidia/lib/cupti"));
  for (const std::string& name : cupti_file_names())
    add(out, name);
  return out;
}

std::vector<std::string> existing_candidates(
    const std::vector<std::string>& candidates,
    const std::function<bool(const std::string&)>& exists) {
  std::vector<std::string> out;
  for (const std::string& c : candidates) {
    if (c.find('/') == std::string::npos || exists(c)) out.push_back(c);
  }
  return out;
}

}  // namespace proton::cupti
