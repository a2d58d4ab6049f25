// The instrumentation runtime's options, given by the session layer (from PROTON_INSTR_*,
// options/environment.h); 0 keeps our choice.
#pragma once

#include <cstdint>

namespace proton::instr {

struct InstrOptions {
  uint64_t pool_bytes = 0;     // each session's device pool (256 MB)
  uint64_t staging_bytes = 0;  // the pinned staging arena (InstrRuntime::kStagingMb)
  uint32_t decoders = 0;       // decoder threads (half the CPUs, kMinDecoders..kMaxDecoders)
  uint32_t gather_ms = 0;      // how long the consumer gathers launches (kGatherMs)
  uint32_t wake_batch = 0;     // launches that wake the consumer early (kWakeBatch)
};

}  // namespace proton::instr
