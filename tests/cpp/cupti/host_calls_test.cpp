// Host-call timing, driven with hand-built CUpti_CallbackData through the launch callback: which
// synchronizes and copies are kept, how copies are classified (a fake cuPointerGetAttribute),
// and that launches are tagged exactly as before.
#include "backends/cupti/host_calls.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "attribution/host_call.h"
#include "attribution/launch_stage.h"
#include "backends/cupti/launch_callbacks.h"
#include "common/hot.h"
#include "test_util.h"

// A namespace of its own: the unity build puts the other callback tests' helpers beside these.
namespace proton::cupti::host_calls_test {
namespace {

using proton::testing::drain_tags;

constexpr auto kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr auto kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

// A call's enter and exit, with its parameters.
void call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params,
          uint32_t correlation = 1) {
  CUpti_CallbackData data{};
  data.correlationId = correlation;
  data.functionName = "test";
  data.functionParams = params;
  data.callbackSite = CUPTI_API_ENTER;
  on_launch_api(nullptr, domain, cbid, &data);
  data.callbackSite = CUPTI_API_EXIT;
  on_launch_api(nullptr, domain, cbid, &data);
}

void launch(uint32_t correlation) {
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr, correlation);
}

// The fake driver's memory: addresses it knows (device or pinned), everything else pageable.
std::map<CUdeviceptr, CUmemorytype> g_memory;
int g_queries = 0;
CUresult fake_pointer_attribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  ++g_queries;
  if (attribute != CU_POINTER_ATTRIBUTE_MEMORY_TYPE) return CUDA_ERROR_NOT_SUPPORTED;
  auto it = g_memory.find(ptr);
  if (it == g_memory.end()) return CUDA_ERROR_INVALID_VALUE;
  *static_cast<unsigned int*>(data) = it->second;
  return CUDA_SUCCESS;
}

constexpr uint64_t kDevice = 0x7f0000000000;
constexpr uint64_t kPinned = 0x200000000;
constexpr uint64_t kPageable = 0x5555000;

void* host(uint64_t a) {
  return reinterpret_cast<void*>(a);
}

std::vector<HostCall> host_calls(const std::vector<LaunchTag>& tags) {
  std::vector<HostCall> out;
  for (const LaunchTag& t : tags)
    if (t.flags & kTagHostCall) out.push_back(host_call_of(t));
  return out;
}

class HostCallTiming : public ::testing::Test {
 protected:
  void SetUp() override {
    reset_launch_nesting();
    drain_tags();
    LaunchStage::active_sessions = 1;
    g_memory = {{kDevice, CU_MEMORYTYPE_DEVICE}, {kPinned, CU_MEMORYTYPE_HOST}};
    g_queries = 0;
    set_host_call_pointer_query(fake_pointer_attribute);
  }
  void TearDown() override {
    LaunchStage::active_sessions = 0;
    set_host_call_pointer_query(nullptr);
  }
  proton::testing::MainThreadFixture main_;
};

TEST_F(HostCallTiming, SynchronizesAreKeptAndNeverTagged) {
  cudaStreamSynchronize_v3020_params stream{reinterpret_cast<cudaStream_t>(0x10)};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &stream);
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr);
  cuEventSynchronize_params event{};
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, &event);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 3u);  // no launch tag among them
  auto calls = host_calls(tags);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].kind, HostCallKind::kStreamSync);
  EXPECT_EQ(calls[1].kind, HostCallKind::kDeviceSync);
  EXPECT_EQ(calls[2].kind, HostCallKind::kEventSync);
  EXPECT_EQ(g_queries, 0);  // only copies ask the driver about memory
  for (const LaunchTag& t : tags)
    EXPECT_EQ(t.sessions, 1u);
}

TEST_F(HostCallTiming, ARuntimeCallIsTimedOnceAroundTheDriverCallInside) {
  CUpti_CallbackData outer{};
  cudaStreamSynchronize_v3020_params p{nullptr};
  outer.functionParams = &p;
  outer.callbackSite = CUPTI_API_ENTER;
  on_launch_api(nullptr, kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &outer);
  cuStreamSynchronize_params inner{nullptr};
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, &inner);
  EXPECT_TRUE(drain_tags().empty());  // the inner exit is not the outermost
  outer.callbackSite = CUPTI_API_EXIT;
  on_launch_api(nullptr, kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &outer);
  EXPECT_EQ(host_calls(drain_tags()).size(), 1u);
  // Afterwards a launch is tagged as ever.
  launch(9);
  auto tags = drain_tags();
  ASSERT_EQ(tags.size(), 1u);
  EXPECT_EQ(tags[0].correlation, 9u);
  EXPECT_EQ(tags[0].flags & kTagHostCall, 0u);
}

TEST_F(HostCallTiming, CopiesAreClassifiedByTheirHostMemory) {
  // Synchronous, pinned: kept (the host waits for the copy).
  cudaMemcpy_v3020_params sync_pinned{host(kDevice), host(kPinned), 256, cudaMemcpyHostToDevice};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &sync_pinned);
  // Asynchronous, pinned: returns at once, not kept.
  cudaMemcpyAsync_v3020_params async_pinned{host(kPinned), host(kDevice), 512,
                                            cudaMemcpyDeviceToHost, nullptr};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &async_pinned);
  // Asynchronous, pageable: the driver stages it, synchronously: kept.
  cudaMemcpyAsync_v3020_params async_pageable{host(kDevice), host(kPageable), 1024,
                                              cudaMemcpyHostToDevice, nullptr};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &async_pageable);
  // cudaMemcpyDefault and the driver's unified copy: the pointers give the direction.
  cudaMemcpyAsync_v3020_params by_pointers{host(kPageable), host(kDevice), 8, cudaMemcpyDefault,
                                           nullptr};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &by_pointers);
  cuMemcpy_params unified{kDevice, kDevice, 64};
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpy, &unified);
  // The driver's explicit copies.
  cuMemcpyDtoH_v2_params dtoh{host(kPageable), kDevice, 4};
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, &dtoh);
  cuMemcpyHtoDAsync_v2_params htod_async{kDevice, host(kPinned), 16, nullptr};
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, &htod_async);  // pinned: not kept

  auto calls = host_calls(drain_tags());
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls[0].direction, CopyDirection::kHtoD);
  EXPECT_EQ(calls[0].memory, HostMemory::kPinned);
  EXPECT_EQ(calls[0].bytes, 256u);
  EXPECT_EQ(calls[1].direction, CopyDirection::kHtoD);
  EXPECT_EQ(calls[1].memory, HostMemory::kPageable);
  EXPECT_EQ(calls[1].bytes, 1024u);
  EXPECT_EQ(calls[2].direction, CopyDirection::kDtoH);
  EXPECT_EQ(calls[2].memory, HostMemory::kPageable);
  EXPECT_EQ(calls[3].direction, CopyDirection::kDtoD);
  EXPECT_EQ(calls[3].memory, HostMemory::kNone);
  EXPECT_EQ(calls[4].direction, CopyDirection::kDtoH);
  EXPECT_EQ(calls[4].memory, HostMemory::kPageable);
  for (const HostCall& c : calls) {
    EXPECT_EQ(c.kind, HostCallKind::kCopy);
    EXPECT_FALSE(c.continued);
  }
}

TEST_F(HostCallTiming, WithoutThePointerQueryAnAsyncCopyIsNotKept) {
  set_host_call_pointer_query(nullptr);
  cudaMemcpyAsync_v3020_params async{host(kDevice), host(kPageable), 1024, cudaMemcpyHostToDevice,
                                     nullptr};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &async);
  cudaMemcpy_v3020_params blocking{host(kDevice), host(kPageable), 8, cudaMemcpyHostToDevice};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, &blocking);
  auto calls = host_calls(drain_tags());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].bytes, 8u);
  EXPECT_EQ(calls[0].memory, HostMemory::kNone);
}

TEST_F(HostCallTiming, TheStreamWaitRightAfterACopyIsTheCopysTime) {
  auto* stream = reinterpret_cast<cudaStream_t>(0x20);
  cudaMemcpyAsync_v3020_params copy{host(kDevice), host(kPageable), 4096, cudaMemcpyHostToDevice,
                                    stream};
  cudaStreamSynchronize_v3020_params wait{stream};
  cudaStreamSynchronize_v3020_params other{reinterpret_cast<cudaStream_t>(0x30)};
  // copy + wait on its stream: one copy, the wait continues it.
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &copy);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &wait);
  // copy + launch + wait: the wait is for the kernel too, a synchronize of its own.
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &copy);
  launch(50);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &wait);
  // copy + wait on another stream: a synchronize.
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &copy);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &other);
  // An asynchronous pinned copy is not kept, so the wait after it (.item()) is a synchronize.
  cudaMemcpyAsync_v3020_params pinned{host(kPinned), host(kDevice), 4, cudaMemcpyDeviceToHost,
                                      stream};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, &pinned);
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &wait);

  auto calls = host_calls(drain_tags());
  ASSERT_EQ(calls.size(), 7u);
  EXPECT_EQ(calls[0].kind, HostCallKind::kCopy);
  EXPECT_EQ(calls[1].kind, HostCallKind::kCopy);
  EXPECT_TRUE(calls[1].continued);
  EXPECT_EQ(calls[1].bytes, 0u);
  EXPECT_EQ(calls[1].direction, CopyDirection::kHtoD);
  EXPECT_EQ(calls[1].memory, HostMemory::kPageable);
  EXPECT_EQ(calls[3].kind, HostCallKind::kStreamSync);
  EXPECT_EQ(calls[5].kind, HostCallKind::kStreamSync);
  EXPECT_EQ(calls[6].kind, HostCallKind::kStreamSync);
  EXPECT_FALSE(calls[6].continued);
}

TEST_F(HostCallTiming, TheProfilersOwnCallsAndIdleSessionsAreNotTimed) {
  {
    ProfilerHostCalls ours;
    call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr);
  }
  ProfilerHostCalls::begin();  // the Python layer's form (device metrics' read-back)
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr);
  ProfilerHostCalls::end();
  ProfilerHostCalls::end();  // unbalanced: ignored, never below zero
  EXPECT_FALSE(ProfilerHostCalls::active());
  LaunchStage::active_sessions = 0;
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr);
  EXPECT_TRUE(drain_tags().empty());
  LaunchStage::active_sessions = 1;
  call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, nullptr);
  EXPECT_EQ(host_calls(drain_tags()).size(), 1u);
}

TEST_F(HostCallTiming, ALaunchLoopStagesExactlyWhatItDidBefore) {
  // The launch path does not look at host calls: the same tags, field for field, with a
  // synchronize between two loops.
  auto loop = [](uint32_t first) {
    for (uint32_t i = 0; i < 100; ++i)
      launch(first + i);
  };
  loop(1000);
  std::vector<LaunchTag> before = drain_tags();
  cudaStreamSynchronize_v3020_params wait{nullptr};
  call(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, &wait);
  ASSERT_EQ(host_calls(drain_tags()).size(), 1u);
  loop(1000);
  std::vector<LaunchTag> after = drain_tags();
  ASSERT_EQ(before.size(), 100u);
  ASSERT_EQ(after.size(), 100u);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].correlation, after[i].correlation);
    EXPECT_EQ(before[i].fanout, 1u);
    EXPECT_EQ(after[i].fanout, 1u);
    EXPECT_EQ(before[i].flags, after[i].flags);
    EXPECT_EQ(before[i].context, after[i].context);
  }
  EXPECT_EQ(hot::this_thread().exit_work, 0);
}

TEST(HostCallList, EveryIdIsAHostCallNoneIsALaunch) {
  std::set<std::pair<int, uint32_t>> launches;
  for (const LaunchCallback& c : launch_callbacks())
    launches.insert({c.domain, c.cbid});
  std::set<std::pair<int, uint32_t>> seen;
  for (const HostCallCallback& c : host_call_callbacks()) {
    EXPECT_TRUE(seen.insert({c.domain, c.cbid}).second) << c.cbid;
    EXPECT_TRUE(is_host_call(c.domain, c.cbid)) << c.cbid;
    EXPECT_EQ(launch_fanout(c.domain, c.cbid), 0u) << c.cbid;  // the launch path's rare branch
    EXPECT_FALSE(launches.count({c.domain, c.cbid})) << c.cbid;
  }
  for (const LaunchCallback& c : launch_callbacks())
    EXPECT_FALSE(is_host_call(c.domain, c.cbid)) << c.cbid;
  for (auto cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
        CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2}) {
    EXPECT_TRUE(seen.count({kDrv, cbid})) << cbid;
  }
  for (auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020}) {
    EXPECT_TRUE(seen.count({kRt, cbid})) << cbid;
  }
  // Asynchronous device-to-device copies never block: not subscribed.
  EXPECT_FALSE(is_host_call(kDrv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2));
}

std::set<std::pair<int, uint32_t>> g_enabled;
CUptiResult fake_enable(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                        CUpti_CallbackId cbid) {
  if (enable) {
    g_enabled.insert({domain, cbid});
  } else {
    g_enabled.erase({domain, cbid});
  }
  return CUPTI_SUCCESS;
}

TEST(HostCallList, EnablingTurnsOnTheseIdsAlone) {
  CuptiApi api;
  api.cuptiEnableCallback = fake_enable;
  std::string error;
  g_enabled.clear();
  int n = set_host_call_callbacks(api, nullptr, true, error);
  EXPECT_EQ(static_cast<size_t>(n), host_call_callbacks().size());
  EXPECT_EQ(g_enabled.size(), host_call_callbacks().size());
  set_host_call_callbacks(api, nullptr, false, error);
  EXPECT_TRUE(g_enabled.empty());
  EXPECT_TRUE(error.empty()) << error;
}

}  // namespace
}  // namespace proton::cupti::host_calls_test
