#include "backends/cupti/nvtx_callbacks.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <vector>

#include "common/name_table.h"
#include "common/utf8.h"
#include "context/thread_context.h"

namespace proton::cupti {

namespace {

// Parameter blocks of the NVTX calls we handle, as generated_nvtx_meta.h declares them (that
// header needs the NVTX headers, which the CUPTI wheels do not ship). The layouts are NVTX's
// stable ABI; nvtxEventAttributes carries its own size, checked before reading the message.
struct RangePushAParams {
  const char* message;
};
struct RangePushWParams {
  const wchar_t* message;
};
struct EventAttributes {  // nvtxEventAttributes_v2
  uint16_t version;
  uint16_t size;
  uint32_t category;
  int32_t color_type;
  uint32_t color;
  int32_t payload_type;
  int32_t reserved0;
  uint64_t payload;
  int32_t message_type;  // 1 ASCII, 2 UNICODE, 3 REGISTERED
  const void* message;
};
static_assert(offsetof(EventAttributes, message_type) == 32 &&
              offsetof(EventAttributes, message) == 40 && sizeof(EventAttributes) == 48);
struct RangePushExParams {
  const EventAttributes* attributes;
};
struct DomainRangePushExParams {
  const void* domain;
  RangePushExParams core;
};

constexpr std::array kNvtxCallbacks = {
    CUPTI_CBID_NVTX_nvtxRangePushA,        CUPTI_CBID_NVTX_nvtxRangePushW,
    CUPTI_CBID_NVTX_nvtxRangePushEx,       CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangePop,
};

std::atomic<uint64_t> g_mismatches{0};  // relaxed counter

// The ContextIds of the scopes NVTX opened on this thread, innermost last (owning thread only).
thread_local std::vector<ContextId> tls_nvtx;

void append_utf8(const wchar_t* s, std::string& out) {
  for (; *s != 0; ++s) {
    ::proton::append_utf8(static_cast<uint32_t>(*s), out);
  }
}

// A range's name from its event attributes; registered strings have no text we can read.
std::string attributes_name(const EventAttributes* a) {
  if (a == nullptr || a->size < offsetof(EventAttributes, message) + sizeof(void*) ||
      a->message == nullptr) {
    return "<nvtx range>";
  }
  if (a->message_type == 1) return static_cast<const char*>(a->message);
  if (a->message_type == 2) {
    std::string out;
    append_utf8(static_cast<const wchar_t*>(a->message), out);
    return out;
  }
  return "<nvtx registered string>";
}

}  // namespace

bool nvtx_enabled_from_env() {
  const char* v = std::getenv("PROTON_NVTX");
  if (v == nullptr) return true;
  std::string_view s(v);
  return !(s == "0" || s == "false" || s == "False" || s == "off" || s == "OFF");
}

void inject_nvtx(const std::string& cupti_path) {
  // Never override a tool the user chose (Nsight Systems sets this for its own injection).
  if (!cupti_path.empty()) setenv("NVTX_INJECTION64_PATH", cupti_path.c_str(), 0);
}

int set_nvtx_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                       std::string& error) {
  int done = 0;
  for (CUpti_CallbackId cbid : kNvtxCallbacks) {
    CUptiResult r =
        api.cuptiEnableCallback(enable ? 1u : 0u, subscriber, CUPTI_CB_DOMAIN_NVTX, cbid);
    if (r == CUPTI_SUCCESS) {
      ++done;
    } else if (error.empty()) {
      error = cupti_error(api, "cuptiEnableCallback(NVTX)", r);
    }
  }
  return done;
}

void on_nvtx(CUpti_CallbackId cbid, const void* data) noexcept {
  const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
  const void* params = nvtx != nullptr ? nvtx->functionParams : nullptr;
  if (params == nullptr) return;
  try {
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA: {
        const char* m = static_cast<const RangePushAParams*>(params)->message;
        nvtx_push(m != nullptr ? m : "<nvtx range>");
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePushW: {
        std::string name;
        if (const wchar_t* m = static_cast<const RangePushWParams*>(params)->message) {
          append_utf8(m, name);
        }
        nvtx_push(name);
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
        nvtx_push(attributes_name(static_cast<const RangePushExParams*>(params)->attributes));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        nvtx_push(
            attributes_name(static_cast<const DomainRangePushExParams*>(params)->core.attributes));
        break;
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        nvtx_pop();
        break;
      default:
        break;
    }
  } catch (...) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);  // out of memory building a name
  }
}

void nvtx_push(std::string_view name) noexcept {
  try {
    ThreadContext& tc = ThreadContext::current();
    tls_nvtx.reserve(tls_nvtx.size() + 1);  // cannot fail after the scope is open
    tc.enter_scope(NameTable::global().intern(name));
    tls_nvtx.push_back(tc.scope_context());
  } catch (...) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
  }
}

void nvtx_pop() noexcept {
  if (tls_nvtx.empty()) {  // a range pushed before NVTX reached us, or an extra pop
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ContextId mine = tls_nvtx.back();
  tls_nvtx.pop_back();
  try {
    ThreadContext& tc = ThreadContext::current();
    if (tc.open_scopes() == 0 || tc.scope_context() != mine) {
      // A user scope opened inside the range is still open: leave it (and ours) alone.
      g_mismatches.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    tc.exit_scope(kNoName);
  } catch (...) {
    g_mismatches.fetch_add(1, std::memory_order_relaxed);
  }
}

size_t nvtx_depth() noexcept {
  return tls_nvtx.size();
}

uint64_t nvtx_mismatches() {
  return g_mismatches.load(std::memory_order_relaxed);
}

}  // namespace proton::cupti
