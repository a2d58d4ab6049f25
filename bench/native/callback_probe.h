// A diagnostic stand-in for the profiler's subscriber callback (bench only):
//
//   timed    the product's callback between two TSC reads: the time our callback body takes
//            inside a real launch (caches as the driver left them), split into API enter and exit
//   empty    a callback that returns at once, with everything else of the profiler running:
//            proton minus this is our callback body; this minus the CUPTI floor is the rest
//
// The product only offers a hook (backends/cupti/subscriber_hook.h): bench/variants.py asks this
// module for a stand-in wrapping the product's callback, and hands it to
// _proton._set_subscriber_callback before proton.start. The default path never sees any of it.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace proton::bench {

/// The callback for `mode` ("timed" or "empty") around `target` (the product's callback);
/// "timed" resets the counters. Throws std::invalid_argument for another mode.
CUpti_CallbackFunc choose_callback(const std::string& mode, CUpti_CallbackFunc target);

struct CallbackTiming {
  std::string mode;          // "", "timed" or "empty"
  uint64_t enter_calls = 0;  // launch-API callbacks at API enter (timed mode only)
  uint64_t exit_calls = 0;
  double enter_ns = 0;  // mean time in the callback per call, TSC reads included
  double exit_ns = 0;
  double probe_ns = 0;  // what two back-to-back TSC reads cost
};

/// The counters since the last choose_callback("timed"), all zero unless that was chosen.
CallbackTiming callback_timing();

}  // namespace proton::bench
