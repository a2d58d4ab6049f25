// A benchmark hook: which function the backend hands to cuptiSubscribe.
//
// The product subscribes on_cupti_callback (launch_callbacks.h). The bench module's callback
// probe (bench/native/callback_probe.h: the callback body timed inside real launches, or an
// empty stand-in) needs to take its place without living in the product: it is set here,
// through _proton._set_subscriber_callback, before proton.start, and read once per start.
// Never read per launch; nullptr restores the default.
#pragma once

#include <cupti.h>

namespace proton::cupti {

void set_subscriber_callback(CUpti_CallbackFunc callback);
/// The override when set, else on_cupti_callback.
CUpti_CallbackFunc subscriber_callback();

}  // namespace proton::cupti
