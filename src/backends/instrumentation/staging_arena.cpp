#include "backends/instrumentation/staging_arena.h"

#include <algorithm>

namespace proton::instr {

void StagingArena::reset(uint8_t* base, size_t size) {
  base_ = base;
  size_ = base != nullptr ? size : 0;
  live_.clear();
}

uint8_t* StagingArena::take(size_t bytes) {
  const size_t need = rounded(bytes);
  if (base_ == nullptr || need > size_) return nullptr;
  // First fit: the gap before each live range, then the tail.
  size_t at = 0;
  auto it = live_.begin();
  for (; it != live_.end(); ++it) {
    if (it->at - at >= need) break;
    at = it->at + it->bytes;
  }
  if (it == live_.end() && size_ - at < need) return nullptr;
  live_.insert(it, Range{at, need});
  return base_ + at;
}

bool StagingArena::give(const uint8_t* p) {
  if (!holds(p)) return false;
  const size_t at = static_cast<size_t>(p - base_);
  auto it = std::find_if(live_.begin(), live_.end(), [&](const Range& r) { return r.at == at; });
  if (it == live_.end()) return false;
  live_.erase(it);
  return true;
}

size_t StagingArena::in_use() const {
  size_t n = 0;
  for (const Range& r : live_)
    n += r.bytes;
  return n;
}

}  // namespace proton::instr
