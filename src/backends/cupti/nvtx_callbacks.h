// NVTX ranges as scopes: nvtxRangePush/Pop (as PyTorch's emit_nvtx and many libraries use)
// open and close a scope on the calling thread, like proton.scope.
//
// CUPTI reports NVTX calls in its NVTX callback domain, but only once NVTX has loaded CUPTI as
// its tool: NVTX looks for a tool at the first NVTX call of each module (each library carries
// its own NVTX state) through the environment variable NVTX_INJECTION64_PATH, and a module that
// found none keeps no-op NVTX functions for good. The backend therefore points
// NVTX_INJECTION64_PATH at the libcupti it loaded when it starts (unless the user set it), as
// triton.profiler does: ranges pushed by modules whose first NVTX call comes after the first
// proton.start() are seen (the `proton` command starts before the script, so all are).
//
// Registered-string messages (NCCL names its ranges so) are named by the text their
// nvtxDomainRegisterString* call gave, when that call came after the first proton.start.
//
// Only push/pop ranges are scopes (nvtxRangePushA/W/Ex, nvtxDomainRangePushEx and the pops):
// start/end ranges may end on another thread and do not nest. Ranges nest per domain: a pop
// closes the innermost open range of its domain, with the NVTX ranges of other domains opened
// inside it, which are opened again one level up. A user scope opened inside is never closed by
// NVTX: such a pop leaves the scopes open. Library ranges (any domain but the default one) that
// are still open when the user opens a scope on the thread lost their pops (NCCL's init and
// finalize ranges never pop): they are closed then, since no Python code runs inside a
// library call. Mismatches are counted, never thrown through CUPTI.
// PROTON_NVTX_DEBUG=1 prints every push and pop (thread, domain, name, what was done) on stderr.
//
// PROTON_NVTX=0 turns it off (read at backend start).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "backends/cupti/cupti_api.h"
#include "context/thread_context.h"

namespace proton::cupti {

/// Whether NVTX ranges become scopes: PROTON_NVTX unset, or anything but 0/false/off.
bool nvtx_enabled_from_env();

/// Points NVTX_INJECTION64_PATH at `cupti_path` unless the user set it already.
void inject_nvtx(const std::string& cupti_path);

/// Enables (or disables) the NVTX push/pop callbacks. Returns how many ids took effect.
int set_nvtx_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                       std::string& error);

/// One NVTX callback (domain CUPTI_CB_DOMAIN_NVTX, data a CUpti_NvtxData). Never throws.
void on_nvtx(CUpti_CallbackId cbid, const void* data) noexcept;

/// The scope operations behind on_nvtx, on the calling thread (tests call them directly).
/// `domain` is the NVTX domain handle (0: the default domain): NVTX nests ranges per domain, so
/// a pop closes the innermost range of its domain; ranges of other domains opened inside it
/// are closed with it and opened again one level up.
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

}  // namespace proton::cupti
