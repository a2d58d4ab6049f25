// NVTX ranges as scopes of the calling thread: what nvtx_callbacks.cpp does with each push and
// pop it decodes.
//
// Ranges nest per domain: a pop closes the innermost open range of its domain, with the NVTX
// ranges of other domains opened inside it, which are opened again one level up. A user scope
// opened inside is never closed by NVTX: such a pop leaves the scopes open. Library ranges (any
// domain but the default one) still open when the user opens a scope on the thread lost their
// pops (NCCL's init and finalize ranges never pop): they are closed then, since no Python code
// runs inside a library call. Mismatches are counted, never thrown through CUPTI.
// BackendOptions::nvtx_debug (PROTON_NVTX_DEBUG=1) prints every push and pop (thread, domain,
// name, what was done) on stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "context/thread_context.h"

namespace proton::cupti {

/// The scope operations behind on_nvtx, on the calling thread (tests call them directly).
/// `domain` is the NVTX domain handle (0: the default domain).
void nvtx_push(std::string_view name, uintptr_t domain = 0) noexcept;
void nvtx_pop(uintptr_t domain = 0) noexcept;
/// NVTX scopes the calling thread has open.
size_t nvtx_depth() noexcept;

/// Before a user scope opens on the thread (ThreadContext::user_scope_hook, set while NVTX
/// callbacks are on): closes the library-domain ranges innermost on the thread, whose pops
/// were lost. Default-domain ranges stay.
void close_library_ranges(ThreadContext& tc) noexcept;
/// Ranges close_library_ranges closed.
uint64_t nvtx_lost_pops();

/// Pops that closed nothing (no NVTX range open, or a user scope innermost) and callbacks that
/// failed (out of memory): counted, not raised.
uint64_t nvtx_mismatches();
/// Every push and pop on stderr (or not), from BackendOptions::nvtx_debug at backend start.
void set_nvtx_debug(bool on) noexcept;
void nvtx_count_mismatch() noexcept;

}  // namespace proton::cupti
