// NVTX ranges as scopes, driven with hand-built CUpti_NvtxData: no libcupti, NVTX or GPU.
#include "backends/cupti/nvtx_callbacks.h"
#include "options/session_options.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "attribution/launch_stage.h"
#include "backends/cupti/launch_callbacks.h"
#include "test_util.h"

namespace proton::cupti {
namespace {

using proton::testing::id;
using proton::testing::path_of;

// The parameter blocks NVTX passes (generated_nvtx_meta.h layouts).
struct PushA {
  const char* message;
};
struct PushW {
  const wchar_t* message;
};
struct Attributes {  // nvtxEventAttributes_v2
  uint16_t version = 3;
  uint16_t size = sizeof(Attributes);
  uint32_t category = 0;
  int32_t color_type = 0;
  uint32_t color = 0;
  int32_t payload_type = 0;
  int32_t reserved0 = 0;
  uint64_t payload = 0;
  int32_t message_type = 1;
  const void* message = nullptr;
};
struct PushEx {
  const Attributes* attributes;
};
struct DomainPushEx {
  const void* domain;
  PushEx core;
};

void callback(CUpti_CallbackId cbid, const void* params) {
  CUpti_NvtxData data{};
  data.functionName = "nvtx";
  data.functionParams = params;
  on_cupti_callback(nullptr, CUPTI_CB_DOMAIN_NVTX, cbid, &data);
}
void push(const char* name) {
  PushA p{name};
  callback(CUPTI_CBID_NVTX_nvtxRangePushA, &p);
}
void pop() {
  void* dummy = nullptr;
  callback(CUPTI_CBID_NVTX_nvtxRangePop, &dummy);
}
std::string here() {
  return path_of(ThreadContext::launch_context());
}

class Nvtx : public ::testing::Test {
 protected:
  void TearDown() override {
    for (int guard = 0; nvtx_depth() > 0 && guard < 64; ++guard)
      for (uintptr_t domain : {uintptr_t{0}, kNccl, kTorch})
        nvtx_pop(domain);
  }
  static constexpr uintptr_t kNccl = 0x1000, kTorch = 0x2000;
  proton::testing::MainThreadFixture main_;
};

TEST_F(Nvtx, PushAndPopAreScopes) {
  push("forward");
  push("linear");
  EXPECT_EQ(here(), "forward/linear");
  EXPECT_EQ(nvtx_depth(), 2u);
  pop();
  EXPECT_EQ(here(), "forward");
  pop();
  EXPECT_EQ(here(), "");
  EXPECT_EQ(ThreadContext::current().open_scopes(), 0u);
}

TEST_F(Nvtx, EveryPushFlavourNamesItsScope) {
  PushW w{L"r\u00e9seau"};
  callback(CUPTI_CBID_NVTX_nvtxRangePushW, &w);
  Attributes ascii;
  ascii.message = "ex_ascii";
  PushEx ex{&ascii};
  callback(CUPTI_CBID_NVTX_nvtxRangePushEx, &ex);
  Attributes wide;
  wide.message_type = 2;
  wide.message = L"ex_wide";
  DomainPushEx domain{nullptr, PushEx{&wide}};
  callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &domain);
  Attributes registered;
  registered.message_type = 3;
  registered.message = reinterpret_cast<const void*>(0x1234);
  PushEx reg{&registered};
  callback(CUPTI_CBID_NVTX_nvtxRangePushEx, &reg);
  EXPECT_EQ(here(), "r\xc3\xa9seau/ex_ascii/ex_wide/<nvtx registered string>");
  const void* d = nullptr;
  callback(CUPTI_CBID_NVTX_nvtxDomainRangePop, &d);
  pop();
  pop();
  pop();
  EXPECT_EQ(here(), "");
}

TEST_F(Nvtx, RegisteredStringsAreNamedByTheirRegistration) {
  // nvtxDomainRegisterStringA(domain, "ncclAllReduce") returned handle h: CUPTI passes a
  // pointer to h as the return value; a later push whose message is h is named by the text.
  struct Register {
    const void* domain;
    const void* string;
  };
  auto reg = [](CUpti_CallbackId cbid, const void* text, uintptr_t handle) {
    Register p{nullptr, text};
    CUpti_NvtxData data{};
    data.functionName = "nvtxDomainRegisterString";
    data.functionParams = &p;
    data.functionReturnValue = &handle;
    on_cupti_callback(nullptr, CUPTI_CB_DOMAIN_NVTX, cbid, &data);
  };
  reg(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "ncclAllReduce", 0xa110);
  reg(CUPTI_CBID_NVTX_nvtxDomainRegisterStringW, L"ncclBroadcast", 0xb0);
  auto push_registered = [](uintptr_t handle) {
    Attributes a;
    a.message_type = 3;
    a.message = reinterpret_cast<const void*>(handle);
    DomainPushEx p{nullptr, PushEx{&a}};
    callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &p);
  };
  push_registered(0xa110);
  push_registered(0xb0);
  push_registered(0x5eed);  // registered before we listened: no text
  EXPECT_EQ(here(), "ncclAllReduce/ncclBroadcast/<nvtx registered string>");
  pop();
  pop();
  pop();
  EXPECT_EQ(here(), "");
}

TEST_F(Nvtx, APopClosesTheInnermostRangeOfItsOwnDomain) {
  // NVTX nests per domain: NCCL's range opened, then a torch range, then NCCL's pop. The NCCL
  // range closes; the torch range is still open in NVTX, so it is opened again one level up.
  nvtx_push("ncclCommInitRank", kNccl);
  nvtx_push("torch_range", kTorch);
  EXPECT_EQ(here(), "ncclCommInitRank/torch_range");
  uint64_t before = nvtx_mismatches();
  nvtx_pop(kNccl);
  EXPECT_EQ(here(), "torch_range");
  EXPECT_EQ(nvtx_depth(), 1u);
  nvtx_pop(kTorch);
  EXPECT_EQ(here(), "");
  EXPECT_EQ(nvtx_mismatches(), before);
  EXPECT_EQ(ThreadContext::current().open_scopes(), 0u);
}

TEST_F(Nvtx, DomainPopsGoThroughTheCallback) {
  Attributes a;
  a.message = "ncclAllReduce";
  const void* nccl = reinterpret_cast<const void*>(kNccl);
  DomainPushEx p{nccl, PushEx{&a}};
  callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &p);
  push("default_domain");
  EXPECT_EQ(here(), "ncclAllReduce/default_domain");
  callback(CUPTI_CBID_NVTX_nvtxDomainRangePop, &nccl);  // NCCL's pop, not the default range's
  EXPECT_EQ(here(), "default_domain");
  pop();
  EXPECT_EQ(here(), "");
}

TEST_F(Nvtx, APopOfADomainWithNothingOpenIsCountedAndChangesNothing) {
  nvtx_push("outer");
  uint64_t before = nvtx_mismatches();
  nvtx_pop(kNccl);
  EXPECT_EQ(nvtx_mismatches(), before + 1);
  EXPECT_EQ(here(), "outer");
  nvtx_pop();
  EXPECT_EQ(here(), "");
}

TEST_F(Nvtx, ARangeAboveAUserScopeIsNeverClosedAcrossIt) {
  auto& tc = ThreadContext::current();
  nvtx_push("nccl", kNccl);
  tc.enter_scope(id("user"));
  nvtx_push("torch", kTorch);
  uint64_t before = nvtx_mismatches();
  nvtx_pop(kNccl);  // would need closing the user's scope: left open, counted
  EXPECT_EQ(nvtx_mismatches(), before + 1);
  EXPECT_EQ(here(), "nccl/user/torch");
  nvtx_pop(kTorch);
  EXPECT_EQ(here(), "nccl/user");
  tc.exit_scope(id("user"));
  EXPECT_EQ(here(), "nccl");
  tc.exit_scope(kNoName);  // the NCCL scope, forgotten by NVTX after its pop
}

// While NVTX callbacks are on, the backend sets ThreadContext::user_scope_hook.
struct LibraryRangeHook {
  LibraryRangeHook() { ThreadContext::user_scope_hook.store(&close_library_ranges); }
  ~LibraryRangeHook() { ThreadContext::user_scope_hook.store(nullptr); }
};

TEST_F(Nvtx, ALibraryRangeWithALostPopClosesWhenTheUserOpensAScope) {
  // NCCL pushes ncclCommInitRankConfig and its pop never comes; the training loop's scopes
  // must not land under it.
  LibraryRangeHook hook;
  auto& tc = ThreadContext::current();
  nvtx_push("ncclCommInitRankConfig", kNccl);
  nvtx_push("ncclAllGather", kNccl);
  nvtx_pop(kNccl);
  EXPECT_EQ(here(), "ncclCommInitRankConfig");  // kernels launched now stay under it
  uint64_t lost = nvtx_lost_pops();
  tc.enter_user_scope(id("step"));
  EXPECT_EQ(here(), "step");
  EXPECT_EQ(nvtx_lost_pops(), lost + 1);
  EXPECT_EQ(nvtx_depth(), 0u);
  nvtx_push("ncclAllReduce", kNccl);  // a collective inside the step nests as usual
  EXPECT_EQ(here(), "step/ncclAllReduce");
  nvtx_pop(kNccl);
  tc.exit_scope(id("step"));
  EXPECT_EQ(here(), "");
}

TEST_F(Nvtx, DefaultDomainRangesHoldUserScopes) {
  LibraryRangeHook hook;
  auto& tc = ThreadContext::current();
  nvtx_push("nccl_lost", kNccl);
  push("torch.cuda.nvtx.range_push");  // default domain: may hold user code
  uint64_t lost = nvtx_lost_pops();
  tc.enter_user_scope(id("user"));
  EXPECT_EQ(here(), "nccl_lost/torch.cuda.nvtx.range_push/user");
  EXPECT_EQ(nvtx_lost_pops(), lost);
  tc.exit_scope(id("user"));
  pop();
  EXPECT_EQ(here(), "nccl_lost");
}

TEST_F(Nvtx, ExtraPopsAreCountedAndNeverCloseUserScopes) {
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("user"));
  uint64_t before = nvtx_mismatches();
  pop();
  EXPECT_EQ(nvtx_mismatches(), before + 1);
  EXPECT_EQ(here(), "user");
  tc.exit_scope(id("user"));
}

TEST_F(Nvtx, UserScopeInsideARangeSurvivesItsPop) {
  auto& tc = ThreadContext::current();
  push("range");
  tc.enter_scope(id("user"));
  uint64_t before = nvtx_mismatches();
  pop();  // the user's scope is innermost: NVTX must not close it
  EXPECT_EQ(nvtx_mismatches(), before + 1);
  EXPECT_EQ(here(), "range/user");
  EXPECT_NO_THROW(tc.exit_scope(id("user")));
  tc.reset();
}

TEST_F(Nvtx, LaunchesInsideARangeAreTaggedWithIt) {
  LaunchStage::drain([](const LaunchTag&) {});
  push("step");
  LaunchStage::tag(77);
  pop();
  std::string got;
  LaunchStage::drain([&](const LaunchTag& t) {
    if (t.correlation == 77) got = path_of(t.context);
  });
  EXPECT_EQ(got, "step");
}

TEST_F(Nvtx, ThreadsKeepTheirOwnRanges) {
  push("main_range");
  std::string inside, after;
  std::thread t([&] {
    push("worker_range");
    inside = here();
    pop();
    after = here();
  });
  t.join();
  // A worker's first scope nests under the main thread's scopes, as for proton.scope.
  EXPECT_EQ(inside, "main_range/worker_range");
  EXPECT_EQ(after, "main_range");
  EXPECT_EQ(here(), "main_range");
  pop();
}

TEST_F(Nvtx, MissingParametersAreIgnored) {
  CUpti_NvtxData data{};
  EXPECT_NO_THROW(on_nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &data));
  EXPECT_NO_THROW(on_nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, nullptr));
  PushA null_message{nullptr};
  callback(CUPTI_CBID_NVTX_nvtxRangePushA, &null_message);
  EXPECT_EQ(here(), "<nvtx range>");
  pop();
}

// The backend's option as the session options build it from PROTON_NVTX.
bool nvtx_enabled_from_env() {
  return make_session_options({}, read_environment()).backend.nvtx;
}

TEST(NvtxEnv, OnUnlessTurnedOff) {
  unsetenv("PROTON_NVTX");
  EXPECT_TRUE(nvtx_enabled_from_env());
  for (const char* off : {"0", "false", "off", "False", "OFF"}) {
    setenv("PROTON_NVTX", off, 1);
    EXPECT_FALSE(nvtx_enabled_from_env()) << off;
  }
  setenv("PROTON_NVTX", "1", 1);
  EXPECT_TRUE(nvtx_enabled_from_env());
  unsetenv("PROTON_NVTX");
}

TEST(NvtxEnv, InjectionKeepsTheUsersChoice) {
  unsetenv("NVTX_INJECTION64_PATH");
  inject_nvtx("/opt/cuda/libcupti.so.12");
  EXPECT_STREQ(std::getenv("NVTX_INJECTION64_PATH"), "/opt/cuda/libcupti.so.12");
  inject_nvtx("/elsewhere/libcupti.so");
  EXPECT_STREQ(std::getenv("NVTX_INJECTION64_PATH"), "/opt/cuda/libcupti.so.12");
  unsetenv("NVTX_INJECTION64_PATH");
}

}  // namespace
}  // namespace proton::cupti
