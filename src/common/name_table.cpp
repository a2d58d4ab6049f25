#include "common/name_table.h"

namespace proton {

NameTable& NameTable::global() {
  static NameTable* table = new NameTable();  // leaked: used from atexit and CUPTI threads
  return *table;
}

NameId NameTable::intern(std::string_view s) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(s); it != index_.end()) return it->second;
  auto id = static_cast<NameId>(names_.push_back(std::string(s)));
  index_.emplace(std::string_view(names_[id]), id);
  return id;
}

}  // namespace proton
