// A diagnostic stand-in for the subscriber callback, chosen at start by PROTON_DIAG_CALLBACK:
//
//   (unset)  on_cupti_callback, the real one
//   timed    on_cupti_callback between two TSC reads: the time our callback body takes inside a
//            real launch (caches as the driver left them), split into API enter and exit
//   empty    a callback that returns at once, with everything else of the profiler running:
//            proton minus this is our callback body; this minus the CUPTI floor is the rest
//
// The probe never touches the default path: the choice is the function handed to cuptiSubscribe.
#pragma once

#include <cupti.h>

#include "backends/cupti/diagnostics.h"

namespace proton::cupti {

/// The callback to subscribe with, from PROTON_DIAG_CALLBACK; "timed" resets the counters.
CUpti_CallbackFunc choose_callback();

// callback_timing() (diagnostics.h) reads the counters since the last choose_callback(), all
// zero unless that chose "timed".

}  // namespace proton::cupti
