#include "backends/cupti/nvtx_callbacks.h"

#include <array>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "common/name_table.h"
#include "common/utf8.h"

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
struct DomainRegisterStringParams {  // the A and W flavours share the layout
  const void* domain;
  const void* string;
};

constexpr std::array kNvtxCallbacks = {
    CUPTI_CBID_NVTX_nvtxRangePushA,
    CUPTI_CBID_NVTX_nvtxRangePushW,
    CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringW,
};

void append_utf8(const wchar_t* s, std::string& out) {
  for (; *s != 0; ++s) {
    ::proton::append_utf8(static_cast<uint32_t>(*s), out);
  }
}

// Registered strings (nvtxDomainRegisterString*): the handle NVTX returned, mapped to the
// interned text. Registration is rare (libraries such as NCCL register their range names once);
// a push of a registered message looks its handle up. Handles are never reused while the
// process lives (NVTX has no unregister), so entries stay for good.
class RegisteredStrings {
 public:
  void add(uintptr_t handle, std::string_view text) {
    NameId id = NameTable::global().intern(text);
    std::lock_guard lock(mu_);
    names_[handle] = id;
  }
  bool find(uintptr_t handle, NameId& id) const {
    std::lock_guard lock(mu_);
    auto it = names_.find(handle);
    if (it == names_.end()) return false;
    id = it->second;
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, NameId> names_;
};

RegisteredStrings& registered() {
  static auto* r = new RegisteredStrings;  // never destroyed: callbacks may come at exit
  return *r;
}

// A range's name from its event attributes. A registered string is found by its handle when
// its registration was seen (after the first proton.start); otherwise it has no text we can read.
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
  if (a->message_type == 3) {
    NameId id = kNoName;
    if (registered().find(reinterpret_cast<uintptr_t>(a->message), id)) {
      return std::string(NameTable::global().name(id));
    }
  }
  return "<nvtx registered string>";
}

// nvtxDomainRegisterString{A,W}: CUpti_NvtxData::functionReturnValue points at the handle.
void on_register_string(const CUpti_NvtxData* nvtx, bool wide) {
  const auto* p = static_cast<const DomainRegisterStringParams*>(nvtx->functionParams);
  if (nvtx->functionReturnValue == nullptr || p->string == nullptr) return;
  uintptr_t handle = *static_cast<const uintptr_t*>(nvtx->functionReturnValue);
  if (handle == 0) return;
  if (wide) {
    std::string text;
    append_utf8(static_cast<const wchar_t*>(p->string), text);
    registered().add(handle, text);
  } else {
    registered().add(handle, static_cast<const char*>(p->string));
  }
}

}  // namespace

void inject_nvtx(const std::string& cupti_path) {
  // Never override a tool the user chose (Nsight Systems sets this for its own injection).
  if (!cupti_path.empty()) setenv("NVTX_INJECTION64_PATH", cupti_path.c_str(), 0);
}

int set_nvtx_callbacks(const CuptiApi& api, CUpti_SubscriberHandle subscriber, bool enable,
                       std::string& error) {
  ThreadContext::user_scope_hook.store(enable ? &close_library_ranges : nullptr,
                                       std::memory_order_relaxed);
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
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const auto* p = static_cast<const DomainRangePushExParams*>(params);
        nvtx_push(attributes_name(p->core.attributes), reinterpret_cast<uintptr_t>(p->domain));
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePop:
        nvtx_pop();
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        nvtx_pop(reinterpret_cast<uintptr_t>(*static_cast<const void* const*>(params)));
        break;
      case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
      case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
        on_register_string(nvtx, cbid == CUPTI_CBID_NVTX_nvtxDomainRegisterStringW);
        break;
      default:
        break;
    }
  } catch (...) {
    nvtx_count_mismatch();  // out of memory building a name
  }
}

}  // namespace proton::cupti
