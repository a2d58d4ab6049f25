// Process-wide string interning.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/chunked_array.h"
#include "common/ids.h"

namespace proton {

/// Maps strings to dense NameIds and back. Interning takes a mutex (it happens at scope entry or
/// on the record thread, never per launch); name() is lock-free because storage never moves.
class NameTable {
 public:
  /// The table shared by every session of the process.
  static NameTable& global();

  NameId intern(std::string_view s);
  /// Valid for the life of the table.
  std::string_view name(NameId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  mutable std::mutex mu_;                               // guards index_ and appends to names_
  std::unordered_map<std::string_view, NameId> index_;  // views into names_
  ChunkedArray<std::string> names_;
};

}  // namespace proton
