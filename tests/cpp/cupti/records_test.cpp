// Translation of CUPTI kernel records into KernelRecords, one field at a time.
#include "backends/cupti/cupti_records.h"

#include <gtest/gtest.h>

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
