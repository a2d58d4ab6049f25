// Exposed communication on synthetic kernel records: each collective's time that no compute
// kernel of its device covered, decided once the compute that could overlap it has arrived.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "attribution/record.h"
#include "data/comm_overlap.h"
#include "format/collective_kernels.h"
#include "io/hatchet_writer.h"
#include "session/session.h"
#include "test_util.h"

namespace proton {
namespace {

using testing::id;

constexpr uint32_t kCompute = 7;  // the compute stream
constexpr uint32_t kComm = 13;    // NCCL's stream

CommOverlap::Site site(uint32_t node) {
  return {0, node, kNoName};
}

// Exposed time per site node, of the collectives decided so far.
std::map<uint32_t, uint64_t> exposed(CommOverlap& c) {
  std::map<uint32_t, uint64_t> out;
  for (const auto& e : c.ready())
    out[e.site.node] += e.exposed_ns;
  return out;
}

TEST(CommOverlap, NamesNcclAndRcclKernelsAsCollectives) {
  EXPECT_TRUE(format::is_collective_kernel("ncclKernel_AllReduce_RING_LL_Sum_float"));
  EXPECT_TRUE(format::is_collective_kernel("ncclDevKernel_Generic_4"));
  EXPECT_TRUE(format::is_collective_kernel("void at::native::(anon)::NCCL_wrapper"));
  EXPECT_FALSE(format::is_collective_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(format::is_collective_kernel("ncc"));
  EXPECT_FALSE(format::is_collective_kernel(""));
}

TEST(CommOverlap, AFullyOverlappedCollectiveIsNotExposed) {
  CommOverlap c;
  c.add(0, kCompute, 0, 1000, false);
  c.add(0, kComm, 100, 900, true, site(1));
  c.add(0, kCompute, 1000, 2000, false);
  EXPECT_TRUE(c.ready().empty());  // held for the window: a late buffer may still bring compute
  c.flush();
  ASSERT_EQ(c.ready().size(), 1u);
  EXPECT_EQ(c.ready()[0].comm_ns, 800u);
  EXPECT_EQ(c.ready()[0].exposed_ns, 0u);
}

TEST(CommOverlap, APartlyOverlappedCollectiveExposesTheRest) {
  CommOverlap c;
  // Compute [0, 300) and [500, 600) (two kernels), a collective [200, 1000): covered 100 + 100.
  c.add(0, kCompute, 0, 300, false);
  c.add(0, kCompute, 500, 600, false);
  c.add(0, kComm, 200, 1000, true, site(1));
  EXPECT_TRUE(c.ready().empty());  // the compute stream may still run beside it
  c.add(0, kCompute, 1200, 1300, false);
  c.flush();
  EXPECT_EQ(exposed(c)[1], 600u);
}

TEST(CommOverlap, OverlappingComputeKernelsCountOnce) {
  CommOverlap c;
  // Two compute streams running [0, 600) and [400, 800) beside a collective [100, 1000).
  c.add(0, 1, 0, 600, false);
  c.add(0, 2, 400, 800, false);
  c.add(0, kComm, 100, 1000, true, site(1));
  c.add(0, 1, 1000, 1100, false);
  c.add(0, 2, 1000, 1100, false);
  c.flush();
  EXPECT_EQ(exposed(c)[1], 200u);  // 900 - union [100, 800)
}

TEST(CommOverlap, ACollectiveAloneIsFullyExposed) {
  CommOverlap c;
  c.add(0, kCompute, 0, 1000, false);
  c.add(0, kComm, 1000, 3000, true, site(1));  // after the compute, not beside it
  c.add(0, kCompute, 3000, 4000, false);
  c.flush();
  EXPECT_EQ(exposed(c)[1], 2000u);
}

TEST(CommOverlap, WaitsAWindowForComputeRecordsArrivingInALaterBuffer) {
  CommOverlap c(CommOverlap::Limits{.window_ns = 1000});
  // The collective's record comes first; the compute kernel that ran beside it ends later and
  // comes in the next buffer (another thread's: records of one stream are not in order).
  c.add(0, kCompute, 0, 100, false);
  c.add(0, kComm, 200, 1200, true, site(1));
  c.add(0, kComm, 1300, 1400, true, site(2));
  c.add(0, kCompute, 2000, 2100, false);  // later on the same stream, from the other thread
  EXPECT_TRUE(c.ready().empty());         // 900 ns past the first collective: within the window
  c.add(0, kCompute, 150, 1250, false);   // the next buffer
  c.add(0, kCompute, 1250, 1500, false);
  c.add(0, kCompute, 2100, 2300, false);  // a window past 1200, not past 1400
  auto got = exposed(c);
  EXPECT_EQ(got[1], 0u);  // covered by the late compute record
  EXPECT_EQ(got.count(2), 0u);
  c.add(0, kCompute, 2300, 2500, false);
  EXPECT_EQ(exposed(c)[2], 0u);
}

TEST(CommOverlap, DevicesAreSweptApart) {
  CommOverlap c;
  // Device 1's compute overlaps device 0's collective in time, and must not cover it.
  c.add(1, kCompute, 0, 1000, false);
  c.add(0, kComm, 100, 900, true, site(1));
  c.add(1, kComm, 100, 900, true, site(2));
  c.add(0, kCompute, 1000, 1100, false);
  c.add(1, kCompute, 1000, 1100, false);
  c.flush();
  auto got = exposed(c);
  EXPECT_EQ(got[1], 800u);  // device 0 ran nothing beside it
  EXPECT_EQ(got[2], 0u);
}

TEST(CommOverlap, TheFlushDecidesWhatStillWaits) {
  CommOverlap c;
  c.add(0, kCompute, 0, 500, false);
  c.add(0, kComm, 100, 1100, true, site(1));
  EXPECT_TRUE(c.ready().empty());  // the compute stream might still come beside it
  c.flush();
  ASSERT_EQ(c.ready().size(), 1u);
  EXPECT_EQ(c.ready()[0].exposed_ns, 600u);  // covered [100, 500)
  c.ready().clear();
  c.flush();
  EXPECT_TRUE(c.ready().empty());  // once only
}

TEST(CommOverlap, ARecordAWindowLaterDecidesAndLaterOnesAreAbsent) {
  CommOverlap c(CommOverlap::Limits{.window_ns = 10'000});
  c.add(0, 3, 0, 50, false);  // a stream that ran once, at startup
  c.add(0, kComm, 100, 1100, true, site(1));
  c.add(0, kCompute, 1100, 5000, false);
  EXPECT_TRUE(c.ready().empty());           // within the window of the collective's end
  c.add(0, kCompute, 5000, 11'200, false);  // 10 us of GPU time past the collective's end
  EXPECT_EQ(exposed(c)[1], 1000u);
  // Erring toward exposed: a compute record of stream 3 that overlapped it, arriving now, is
  // not subtracted.
  c.ready().clear();
  c.add(0, 3, 100, 1100, false);
  c.flush();
  EXPECT_TRUE(c.ready().empty());
}

TEST(CommOverlap, CollectiveRecordsAHundredMillisecondsLateStillMeetTheirCompute) {
  // As CUPTI delivered a DDP step loop on an H100: NCCL's stream keeps its records in a buffer
  // of its own, handed over ~50-120 ms of GPU time after the compute records beside them. Each
  // 3.5 ms step: compute [0, 3000) in 30 kernels, an all-reduce [2000, 3000) beside its last
  // third. Each step's all-reduce record comes after the compute of 30 steps more (105 ms).
  CommOverlap c;
  const uint64_t step = 3'500'000;
  auto collective = [&](uint64_t i) {
    c.add(0, kComm, i * step + 2'000'000, i * step + 3'000'000, true, site(1));
  };
  for (uint64_t i = 0; i < 100; ++i) {
    for (uint64_t k = 0; k < 30; ++k)
      c.add(0, kCompute, i * step + k * 100'000, i * step + k * 100'000 + 90'000, false);
    if (i >= 30) collective(i - 30);
  }
  for (uint64_t i = 70; i < 100; ++i)
    collective(i);
  uint64_t comm = 0, exposed_ns = 0;
  c.flush();
  for (const auto& e : c.ready()) {
    comm += e.comm_ns;
    exposed_ns += e.exposed_ns;
  }
  EXPECT_EQ(comm, 100u * 1'000'000);
  EXPECT_EQ(exposed_ns, 100u * 10 * 10'000);  // only the 10 us gaps between the kernels
  EXPECT_EQ(c.late(), 0u);
}

TEST(CommOverlap, AsksForAFlushWhenACollectiveStreamFallsBehind) {
  CommOverlap c(CommOverlap::Limits{.window_ns = 1'000'000, .flush_lag_ns = 1000});
  c.add(0, kCompute, 0, 500, false);
  EXPECT_FALSE(c.take_flush_wanted());  // no collective stream yet: nothing awaited
  c.add(0, kComm, 500, 600, true, site(1));
  c.add(0, kCompute, 600, 1500, false);
  EXPECT_FALSE(c.take_flush_wanted());  // NCCL's stream is 900 ns behind: within the lag
  c.add(0, kCompute, 1500, 1700, false);
  EXPECT_TRUE(c.take_flush_wanted());   // 1,100 ns behind
  EXPECT_FALSE(c.take_flush_wanted());  // read once
  c.add(0, kCompute, 1700, 2600, false);
  EXPECT_FALSE(c.take_flush_wanted());  // asked at 1,700: not again within the lag
  c.add(0, kCompute, 2600, 2800, false);
  EXPECT_TRUE(c.take_flush_wanted());  // still quiet a lag later: once more
  // A collective held for a compute stream that is behind asks too.
  CommOverlap w(CommOverlap::Limits{.window_ns = 1'000'000, .flush_lag_ns = 1000});
  w.add(0, 3, 0, 100, false);
  w.add(0, kComm, 100, 200, true, site(1));
  w.add(0, kComm, 5000, 5100, true, site(2));
  EXPECT_TRUE(w.take_flush_wanted());
  // Streams that never carried a collective, however far behind, ask for nothing.
  CommOverlap q(CommOverlap::Limits{.window_ns = 1'000'000, .flush_lag_ns = 1000});
  q.add(0, 3, 0, 100, false);
  q.add(0, kCompute, 100, 50'000, false);
  EXPECT_FALSE(q.take_flush_wanted());
}

TEST(CommOverlap, MemoryStaysBoundedOnALongRun) {
  CommOverlap c(CommOverlap::Limits{.window_ns = 10'000, .max_waiting = 16, .max_busy = 64});
  // 100k compute kernels with gaps, and a collective on its own stream every 100: what is held
  // stays within the window, and every collective is decided with its compute.
  uint64_t t = 0;
  uint64_t decided = 0;
  size_t most = 0;
  for (int i = 0; i < 100'000; ++i, t += 1000) {
    c.add(0, kCompute, t, t + 900, false);
    if (i % 100 == 0) c.add(0, kComm, t + 950, t + 1950, true, site(1));
    decided += c.ready().size();
    for (const auto& e : c.ready())
      EXPECT_EQ(e.exposed_ns, 50u + 50u);  // the gaps between compute kernels [t+900, t+1000)
    c.ready().clear();
    most = std::max(most, c.held());
  }
  c.flush();
  decided += c.ready().size();
  EXPECT_EQ(decided, 1000u);
  EXPECT_EQ(c.forced(), 0u);
  EXPECT_LE(most, 16u);
}

TEST(CommOverlap, FullLimitsLetTheOldestGoTowardExposed) {
  CommOverlap c(CommOverlap::Limits{.window_ns = 1'000'000'000, .max_waiting = 4, .max_busy = 8});
  c.add(0, kCompute, 0, 10, false);
  c.add(0, kComm, 0, 1000, true, site(1));  // held: the compute stream is behind
  // 100 short compute kernels with gaps beside it: more than the 8 intervals a device keeps.
  for (uint64_t t = 20; t < 1000; t += 10)
    c.add(0, 3, t, t + 5, false);
  EXPECT_LE(c.held(), 8u + 1u);
  EXPECT_GT(c.forced(), 0u);
  c.flush();
  ASSERT_EQ(c.ready().size(), 1u);
  // Covered at most 10 + 98 x 5 = 500 ns: the compute let go counts as absent.
  EXPECT_GE(c.ready()[0].exposed_ns, 500u);
  EXPECT_LE(c.ready()[0].exposed_ns, 1000u);
  // Five collectives where four may wait: the four waiting are decided early.
  CommOverlap w(CommOverlap::Limits{.max_waiting = 4});
  w.add(0, kCompute, 0, 10, false);
  for (uint64_t i = 0; i < 5; ++i)
    w.add(0, kComm, 100 + i * 100, 150 + i * 100, true, site(static_cast<uint32_t>(i)));
  EXPECT_EQ(w.ready().size(), 4u);
  EXPECT_LE(w.held(), 4u + 1u);
}

// --- In a session: the tree collector feeds the sweep and puts the exposed time on the node.

// Hands `s` one kernel record of `name` on `stream` (KernelDone holds references).
void kernel(Session& s, const char* name, uint32_t stream, uint64_t start, uint64_t end,
            uint32_t device = 0) {
  LaunchTag tag{};
  tag.sessions = 1;
  tag.fanout = 1;
  KernelRecord r;
  r.start_ns = start;
  r.end_ns = end;
  r.name = id(name);
  r.device_id = device;
  r.stream_id = stream;
  s.collect(KernelDone{tag, r});
}

const CallTree::Node* child(const CallTree& t, const char* name) {
  for (CallTree::NodeId k : t.node(CallTree::kRoot).children)
    if (t.node(k).name == id(name)) return &t.node(k);
  return nullptr;
}

int64_t exposed_of(const CallTree::Node* n) {
  for (const auto& [metric, v] : n->metrics)
    if (metric == id("exposed_comm (ns)")) return std::get<int64_t>(v);
  return -1;
}

TEST(CommOverlapSession, ExposedTimeLandsOnTheNcclNodeAndTheRootColumns) {
  testing::MainThreadFixture main;
  SessionConfig config;
  Session s(0, config);
  const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  // Step 1: the all-reduce runs alone after the backward pass. Step 2: beside the GEMM. Two
  // devices, records of a later buffer first.
  kernel(s, "gemm", kCompute, 0, 1000);
  kernel(s, nccl, kComm, 1000, 1400);  // alone: 400 exposed
  kernel(s, nccl, kComm, 1500, 1900);  // beside the GEMM that comes next
  kernel(s, "gemm", kCompute, 1400, 2000);
  kernel(s, "gemm", kCompute, 0, 100, /*device=*/1);
  kernel(s, nccl, kComm, 200, 500, /*device=*/1);
  std::lock_guard lock(s.mu);
  const CallTree::Node* n = child(s.tree(), nccl);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(exposed_of(n), -1);  // held for the window: later buffers may bring compute
  s.settle_comm();               // the finalize's flush decides them
  EXPECT_EQ(exposed_of(child(s.tree(), "gemm")), -1);  // compute gets no such metric
  EXPECT_EQ(exposed_of(n), 700);
  EXPECT_EQ(n->kernel.time_ns, 1100u);

  // Summed, so the root lists it as a column (Hatchet reads columns from the root).
  auto doc = nlohmann::json::parse(hatchet_json(s.tree(), {}, {}));
  EXPECT_EQ(doc[0]["metrics"]["exposed_comm (ns)"], 0);
  bool on_node = false;
  for (const auto& c : doc[0]["children"])
    if (c["frame"]["name"] == nccl) on_node = c["metrics"]["exposed_comm (ns)"] == 700;
  EXPECT_TRUE(on_node) << doc.dump();
}

TEST(CommOverlapSession, ASessionAwaitingCollectiveRecordsWantsAFlush) {
  testing::MainThreadFixture main;
  SessionConfig config;
  Session s(0, config);
  kernel(s, "ncclKernel_AllGather", kComm, 0, 300);
  kernel(s, "gemm", kCompute, 300, 20'000'000);
  EXPECT_FALSE(s.take_records_wanted());
  kernel(s, "gemm", kCompute, 20'000'000, 60'000'000);  // NCCL's stream 60 ms behind
  EXPECT_TRUE(s.take_records_wanted());
  EXPECT_FALSE(s.take_records_wanted());
}

TEST(CommOverlapSession, AClearedPhaseTakesNoStaleExposedTime) {
  testing::MainThreadFixture main;
  SessionConfig config;
  Session s(0, config);
  kernel(s, "ncclKernel_AllGather", kComm, 0, 300);  // held: compute may come
  std::lock_guard lock(s.mu);
  s.clear_phases(0, false);
  s.settle_comm();  // its node is gone: nothing lands on whatever node took its id
  EXPECT_EQ(s.tree().size(), 1u);
}

}  // namespace
}  // namespace proton
