// Translation of CUPTI kernel records into KernelRecords, one field at a time.
#include "backends/cupti/cupti_records.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <string>

#include "common/name_table.h"
#include "fake_cupti.h"

namespace proton::cupti {
namespace {

using testing::kernel;

TEST(CuptiRecords, TranslatesEveryField) {
  static const char kName[] = "triton_poi_fused_add_0";
  CUpti_ActivityKernel10 k = kernel(4242, kName, 1000, 1750);
  k.deviceId = 3;
  k.streamId = 13;
  k.graphId = 77;
  k.graphNodeId = 0x1234567890ull;
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r));
  EXPECT_EQ(r.correlation, 4242u);
  EXPECT_EQ(r.start_ns, 1000u);
  EXPECT_EQ(r.end_ns, 1750u);
  EXPECT_EQ(NameTable::global().name(r.name), kName);
  EXPECT_EQ(r.device_id, 3u);
  EXPECT_EQ(r.stream_id, 13u);
  EXPECT_EQ(r.device_type, DeviceType::kCuda);
  EXPECT_EQ(r.graph_id, 77u);
  EXPECT_EQ(r.graph_node_id, 0x1234567890ull);
}

TEST(CuptiRecords, SerialKernelKindIsTranslatedToo) {
  CUpti_ActivityKernel10 k = kernel(5, "k", 1, 2);
  k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  KernelNameCache names;
  KernelRecord r;
  EXPECT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r));
  EXPECT_EQ(r.correlation, 5u);
}

TEST(CuptiRecords, OtherKindsAreSkippedAndLeaveTheOutputAlone) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.correlationId = 9;
  KernelNameCache names;
  KernelRecord r;
  r.correlation = 123;
  EXPECT_FALSE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(m), names, r));
  EXPECT_EQ(r.correlation, 123u);
}

TEST(CuptiRecords, OlderRecordVersionsReadTheSameFields) {
  // libcupti.so.12 (torch's wheels) writes CUpti_ActivityKernel9; the fields we read must sit
  // where version 10 has them.
  CUpti_ActivityKernel9 k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = 31;
  k.start = 10;
  k.end = 20;
  k.deviceId = 1;
  k.streamId = 2;
  k.name = "old";
  k.graphId = 4;
  k.graphNodeId = 5;
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r));
  EXPECT_EQ(r.correlation, 31u);
  EXPECT_EQ(r.end_ns - r.start_ns, 10u);
  EXPECT_EQ(r.device_id, 1u);
  EXPECT_EQ(r.stream_id, 2u);
  EXPECT_EQ(NameTable::global().name(r.name), "old");
  EXPECT_EQ(r.graph_id, 4u);
  EXPECT_EQ(r.graph_node_id, 5u);
}

TEST(CuptiRecords, UntimedKernelsCountWithZeroTimeAndTimeNeverRunsBackwards) {
  KernelNameCache names;
  KernelRecord r;
  CUpti_ActivityKernel10 untimed = kernel(1, "k", 0, 0);  // CUPTI ran out of device memory
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(untimed), names, r));
  EXPECT_EQ(r.end_ns - r.start_ns, 0u);
  CUpti_ActivityKernel10 backwards = kernel(2, "k", 500, 400);
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(backwards), names, r));
  EXPECT_EQ(r.start_ns, 500u);
  EXPECT_EQ(r.end_ns, 500u);
}

// A kernel record with every launch fact set, each to a value of its own.
CUpti_ActivityKernel10 configured_kernel() {
  CUpti_ActivityKernel10 k = kernel(8, "gemm", 100, 900);
  k.gridX = 264;
  k.gridY = 3;
  k.gridZ = 2;
  k.blockX = 128;
  k.blockY = 2;
  k.blockZ = 1;
  k.registersPerThread = 168;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 98304;
  k.localMemoryPerThread = 48;
  k.clusterX = 2;
  k.clusterY = 1;
  k.clusterZ = 1;
  return k;
}

TEST(CuptiRecords, TranslatesTheLaunchConfiguration) {
  CUpti_ActivityKernel10 k = configured_kernel();
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r,
                               KernelLayout{.clusters = true}));
  const LaunchFacts& f = r.launch;
  EXPECT_TRUE(f.known());
  EXPECT_EQ(f.grid, (std::array<uint32_t, 3>{264, 3, 2}));
  EXPECT_EQ(f.block, (std::array<uint16_t, 3>{128, 2, 1}));
  EXPECT_EQ(f.cluster, (std::array<uint16_t, 3>{2, 1, 1}));
  EXPECT_EQ(f.registers_per_thread, 168u);
  EXPECT_EQ(f.static_shared_bytes, 1024u);
  EXPECT_EQ(f.dynamic_shared_bytes, 98304u);
  EXPECT_EQ(f.local_bytes_per_thread, 48u);
}

TEST(CuptiRecords, ClustersAreReadOnlyFromALibcuptiThatWritesThem) {
  EXPECT_FALSE(kernel_layout_for(0).clusters);   // version unknown
  EXPECT_FALSE(kernel_layout_for(18).clusters);  // CUDA 11.8
  EXPECT_TRUE(kernel_layout_for(19).clusters);   // CUDA 12.0
  EXPECT_TRUE(kernel_layout_for(28).clusters);   // CUDA 12.9 Update 1
  EXPECT_TRUE(kernel_layout_for(130001).clusters);
  CUpti_ActivityKernel10 k = configured_kernel();
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r));
  EXPECT_EQ(r.launch.cluster, (std::array<uint16_t, 3>{0, 0, 0}));
  EXPECT_EQ(r.launch.block[0], 128u);
}

TEST(CuptiRecords, TheOldestRecordVersionGivesItsLaunchFactsWithoutReadingPastItsEnd) {
  // Version 7 (the oldest we accept) ends before the cluster fields: a record allocated at its
  // exact size lets the address sanitizer catch any read beyond it.
  auto k = std::make_unique<CUpti_ActivityKernel7>();
  std::memset(k.get(), 0, sizeof(*k));
  k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k->correlationId = 3;
  k->name = "v7";
  k->gridX = 10;
  k->gridY = 1;
  k->gridZ = 1;
  k->blockX = 256;
  k->blockY = 1;
  k->blockZ = 1;
  k->registersPerThread = 40;
  k->staticSharedMemory = 16;
  k->dynamicSharedMemory = 512;
  k->localMemoryPerThread = 8;
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(*k), names, r,
                               kernel_layout_for(18)));
  EXPECT_EQ(r.launch.grid[0], 10u);
  EXPECT_EQ(r.launch.block[0], 256u);
  EXPECT_EQ(r.launch.registers_per_thread, 40u);
  EXPECT_EQ(r.launch.static_shared_bytes, 16u);
  EXPECT_EQ(r.launch.dynamic_shared_bytes, 512u);
  EXPECT_EQ(r.launch.local_bytes_per_thread, 8u);
  EXPECT_EQ(r.launch.cluster[0], 0u);
}

TEST(CuptiRecords, ImpossibleLaunchFactsReadAsNotRecorded) {
  CUpti_ActivityKernel10 k = configured_kernel();
  k.gridX = -5;
  k.blockX = 0;
  k.dynamicSharedMemory = -1;
  k.clusterX = 70000;  // does not fit a dimension
  KernelNameCache names;
  KernelRecord r;
  ASSERT_TRUE(translate_kernel(reinterpret_cast<const CUpti_Activity&>(k), names, r,
                               KernelLayout{.clusters = true}));
  EXPECT_EQ(r.launch.grid[0], 0u);
  EXPECT_EQ(r.launch.dynamic_shared_bytes, 0u);
  EXPECT_EQ(r.launch.cluster[0], 0u);
  EXPECT_FALSE(r.launch.known());  // no block: the tree keeps nothing of it
}

TEST(CuptiNames, SamePointerHitsTheCacheAndEqualStringsShareAnId) {
  KernelNameCache names;
  static const char kA[] = "gemm_kernel";
  std::string copy = kA;  // same text, another pointer (another module's copy)
  NameId a = names.intern(kA);
  EXPECT_EQ(names.misses(), 1u);
  EXPECT_EQ(names.intern(kA), a);
  EXPECT_EQ(names.misses(), 1u);
  EXPECT_EQ(names.intern(copy.c_str()), a);
  EXPECT_EQ(NameTable::global().name(a), "gemm_kernel");
  names.clear();
  EXPECT_EQ(names.intern(kA), a);
  EXPECT_EQ(names.misses(), 3u);
}

TEST(CuptiNames, ManyDistinctNamesStayDistinct) {
  KernelNameCache names;
  std::vector<std::string> texts;
  for (int i = 0; i < 1000; ++i)
    texts.push_back("kernel_" + std::to_string(i));
  std::vector<NameId> ids;
  for (auto& t : texts)
    ids.push_back(names.intern(t.c_str()));
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(names.intern(texts[i].c_str()), ids[i]);
    EXPECT_EQ(NameTable::global().name(ids[i]), texts[i]);
  }
}

TEST(CuptiNames, MissingNameGetsAPlaceholder) {
  KernelNameCache names;
  NameId id = names.intern(nullptr);
  EXPECT_EQ(NameTable::global().name(id), "<unnamed kernel>");
}

}  // namespace
}  // namespace proton::cupti
