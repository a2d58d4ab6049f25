// Integer ids that carry interned things through the profiler.
//
// Everything that crosses the hot path is an id: frame names, kernel names and metric names are
// interned once (at scope entry, or on the record-processing thread) and never compared as
// strings again.
#pragma once

#include <cstdint>
#include <limits>

namespace proton {

/// An interned string (frame name, kernel name, metric name). See NameTable.
using NameId = uint32_t;
inline constexpr NameId kNoName = std::numeric_limits<NameId>::max();

/// A node of the process-wide context trie: one calling path (scopes, states, Python frames).
/// 0 is the empty path. See ContextTree.
using ContextId = uint32_t;
inline constexpr ContextId kRootContext = 0;

/// Index of a session; sessions are addressed by bit in a 64-bit activity mask.
using SessionId = uint32_t;
inline constexpr SessionId kMaxSessions = 64;
using SessionMask = uint64_t;

}  // namespace proton
