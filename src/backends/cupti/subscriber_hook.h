// A benchmark hook: which function the backend hands to cuptiSubscribe.
//
// The product subscribes on_cupti_callback (launch_callbacks.h). The bench module's callback
// probe (bench/native/callback_probe.h: the callback body timed inside real launches, or an
// empty stand-in) needs to take its place without living in the product. Only a diagnostics
// build (PROTON_BUILD_DIAGNOSTICS) has the hook: there it is set through
// _proton._set_subscriber_callback before proton.start and read once per start, never per
// launch (nullptr restores the default). Other builds subscribe on_cupti_callback, always.
#pragma once

#include <cupti.h>

#include "backends/cupti/launch_callbacks.h"

namespace proton::cupti {

#ifdef PROTON_DIAGNOSTICS
void set_subscriber_callback(CUpti_CallbackFunc callback);
/// The override when set, else on_cupti_callback.
CUpti_CallbackFunc subscriber_callback();
#else
inline CUpti_CallbackFunc subscriber_callback() {
  return on_cupti_callback;
}
#endif

}  // namespace proton::cupti
