// Which device PM sampling samples (pm_sampling_setup.h): samples are device-wide, so a rank of
// a multi-GPU job must sample its own GPU, not device 0 (another process's).
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cupti/pm_sampling_setup.h"

namespace proton::cupti {
namespace {

TEST(PmDevice, TheCurrentContextsDeviceComesFirst) {
  EXPECT_EQ(pm_device_for(1, 0, 2), 1u);
  EXPECT_EQ(pm_device_for(0, 1, 2), 0u);
}

TEST(PmDevice, WithoutAContextTheLaunchersLocalRankNamesTheDevice) {
  EXPECT_EQ(pm_device_for(-1, 1, 2), 1u);  // torchrun: rank 1 uses cuda:1
}

TEST(PmDevice, ALocalRankBeyondTheVisibleDevicesMeansOneDevicePerRank) {
  EXPECT_EQ(pm_device_for(-1, 3, 1), 0u);  // CUDA_VISIBLE_DEVICES gave each rank its one GPU
  EXPECT_EQ(pm_device_for(-1, -1, 8), 0u);
}

int g_ctx_device = -1;  // the fake driver's current context's device; -1: no context

TEST(PmDevice, AsksTheDriverAndTheEnvironment) {
  CountersApi api;
  api.cuCtxGetCurrent = [](CUcontext* ctx) {
    *ctx = g_ctx_device >= 0 ? reinterpret_cast<CUcontext>(0x1000) : nullptr;
    return CUDA_SUCCESS;
  };
  api.cuCtxGetDevice = [](CUdevice* dev) { return *dev = g_ctx_device, CUDA_SUCCESS; };
  api.cuDeviceGetCount = [](int* n) { return *n = 2, CUDA_SUCCESS; };
  const char* saved = std::getenv("LOCAL_RANK");
  std::string keep = saved != nullptr ? saved : "";
  setenv("LOCAL_RANK", "1", 1);
  g_ctx_device = -1;
  EXPECT_EQ(pm_device(api, -1), 1u);
  g_ctx_device = 0;
  EXPECT_EQ(pm_device(api, -1), 0u) << "the context the process made wins over the rank";
  // The rank the Python layer detected (mpirun, srun: no LOCAL_RANK) wins over the variable.
  g_ctx_device = -1;
  setenv("LOCAL_RANK", "0", 1);
  EXPECT_EQ(pm_device(api, 1), 1u);
  setenv("LOCAL_RANK", "not a number", 1);
  g_ctx_device = -1;
  EXPECT_EQ(pm_device(api, -1), 0u);
  if (saved != nullptr) {
    setenv("LOCAL_RANK", keep.c_str(), 1);
  } else {
    unsetenv("LOCAL_RANK");
  }
}

}  // namespace
}  // namespace proton::cupti
