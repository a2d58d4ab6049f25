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
// start/end ranges may end on another thread and do not nest. How ranges become scopes, per
// domain, and what happens to mismatched or lost pops: nvtx_ranges.h.
//
// BackendOptions::nvtx (PROTON_NVTX=0, or triton.knobs.proton.enable_nvtx=False) turns it off.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

#include "backends/cupti/cupti_api.h"
#include "backends/cupti/nvtx_ranges.h"

namespace proton::cupti {

/// Points NVTX_INJECTION64_PATH at `cupti_path` unless the user set it already.
void inject_nvtx(const std::string& cupti_path);

/// Enables (or disables) the NVTX push/pop callbacks. Returns how many ids took effect.
int set_nvtx_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                       std::string& error);

/// One NVTX callback (domain CUPTI_CB_DOMAIN_NVTX, data a CUpti_NvtxData). Never throws.
void on_nvtx(CUpti_CallbackId cbid, const void* data) noexcept;

}  // namespace proton::cupti
