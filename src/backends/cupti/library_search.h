// Where libcupti is looked for, as a pure function of the inputs (testable without CUPTI).
//
// Order, first match wins:
//   1. PROTON_CUPTI_PATH (a file, or a folder holding libcupti): the user's explicit choice.
//   2. A libcupti already loaded in the process (torch's wheels load libcupti.so.12 at import):
//      two CUPTI copies in one process would fight over the driver's callback hooks, so we
//      reuse the resident one. (Not in this list: the loader checks it with RTLD_NOLOAD.)
//   3. Folders the Python package passed in (set_cupti_search_paths), as lib folders.
//   4. The CUDA toolkit: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda; extras/CUPTI/lib64, lib64.
//   5. Python roots (3.'s folders and the one holding our module), wheel layouts:
//      nvidia/cu13/lib (CUDA 13 wheels ship one "cu13" tree), nvidia/cuda_cupti/lib (CUDA 12
//      wheels), then Triton's bundled copy triton/backends/nvidia/lib/cupti.
//   6. Bare sonames, resolved by the dynamic loader (LD_LIBRARY_PATH, ld.so.cache).
// In each folder the unversioned name comes first (a toolkit's choice), then the sonames the
// wheels ship (they have no unversioned libcupti.so).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace proton::cupti {

struct LibrarySearch {
  std::string override_path;              // PROTON_CUPTI_PATH, may be empty
  std::vector<std::string> extra_dirs;    // from set_cupti_search_paths
  std::vector<std::string> cuda_roots;    // toolkit roots, in order
  std::vector<std::string> python_roots;  // site-packages folders, in order
};

/// File names tried inside each folder, newest first.
const std::vector<std::string>& cupti_file_names();

/// Every candidate path, in search order (duplicates removed). Bare names (no '/') come last
/// and are meant for the dynamic loader.
std::vector<std::string> cupti_candidates(const LibrarySearch& search);

/// The candidates worth a dlopen: paths for which `exists` is true, plus the bare names.
std::vector<std::string> existing_candidates(const std::vector<std::string>& candidates,
                                             const std::function<bool(const std::string&)>& exists);

}  // namespace proton::cupti
