#include "backends/cupti/subscriber_hook.h"

#include <atomic>

#include "backends/cupti/diagnostics.h"
#include "backends/cupti/launch_callbacks.h"

namespace proton::cupti {

namespace {
std::atomic<CUpti_CallbackFunc> g_override{nullptr};  // set before start, read at start
}  // namespace

void set_subscriber_callback(CUpti_CallbackFunc callback) {
  g_override.store(callback, std::memory_order_release);
}

CUpti_CallbackFunc subscriber_callback() {
  CUpti_CallbackFunc f = g_override.load(std::memory_order_acquire);
  return f != nullptr ? f : on_cupti_callback;
}

uintptr_t product_callback_address() {
  return reinterpret_cast<uintptr_t>(&on_cupti_callback);
}

void set_subscriber_callback_address(uintptr_t address) {
  set_subscriber_callback(reinterpret_cast<CUpti_CallbackFunc>(address));
}

}  // namespace proton::cupti
