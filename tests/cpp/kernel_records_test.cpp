// Sessions without CUPTI's kernel records (instrumentation sessions keeping region cycles only,
// unless PROTON_INSTR_KERNEL_TIME=1), through the whole Runtime over a fake backend: how the
// backend is started, how sessions with and without records run together, and where their
// regions land on the trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/clock.h"
#include "data/region_metrics.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

/// `c` with kernel records on or off, keeping `data`.
SessionConfig records(SessionConfig c, bool kernel_records, const std::string& data = "tree") {
  c.data = data;
  c.kernel_records = kernel_records;
  return c;
}

class KernelRecords : public testing::RuntimeFixture {
 protected:
  KernelRecords() : RuntimeFixture("proton_kernel_records_test_", 0) {}
  SessionConfig config(const std::string& name, bool kernel_records,
                       const std::string& data = "tree") {
    return records(RuntimeFixture::config(name), kernel_records, data);
  }
  /// One launch's regions as the instrumentation runtime delivers them: region "load" of
  /// 100 cycles on two warps, its spans at global-timer ns from `first_ns` on.
  void deliver(SessionId slot, uint64_t first_ns) {
    std::vector<RegionTotals> totals{{{id("load")}, 200, 2}};
    std::vector<RegionSpan> spans{{id("load"), 3, 0, 0, first_ns, first_ns + 50},
                                  {id("load"), 3, 0, 1, first_ns + 10, first_ns + 70}};
    rt_.deliver_outside_batch(SessionMask{1} << slot,
                              LaunchRegions{kRootContext, id("gemm"), totals, 8, 0, spans,
                                            LaunchSpan{first_ns - 5, first_ns + 90}});
  }
};

TEST_F(KernelRecords, ASessionWithoutThemStartsTheBackendWithout) {
  SessionId s = rt_.start(config("cycles_only", false));
  EXPECT_FALSE(log_.kernel_records);
  rt_.finalize(s, "");
  rt_.start(config("timed", true));
  EXPECT_TRUE(log_.kernel_records);
}

TEST_F(KernelRecords, ASessionTimingKernelsTurnsThemOnBesideOneWithout) {
  // Started without records, the backend gets them when a kernel-timing session joins and
  // loses them when the last one ends; the first session keeps region cycles only, as it
  // started: the records it is handed too are left alone, the other sessions' trees have them.
  SessionId a = rt_.start(config("a", false));
  EXPECT_FALSE(log_.kernel_records);
  SessionId b = rt_.start(config("b", true));
  SessionId b2 = rt_.start(config("b2", true));
  EXPECT_EQ(log_.records_enabled, 1);  // on already for the second
  EXPECT_TRUE(log_.kernel_records);
  EXPECT_EQ(log_.starts, 1);  // turned on in the running backend, not a restart
  launch("gemm", 500);
  rt_.finalize(b, "");
  EXPECT_EQ(log_.records_disabled, 0);  // b2 still times kernels
  rt_.finalize(b2, "");
  EXPECT_EQ(log_.records_disabled, 1);  // a runs on, its launches without kernel records
  EXPECT_FALSE(log_.kernel_records);
  SessionId c = rt_.start(config("c", true));
  EXPECT_EQ(log_.records_enabled, 2);
  launch("gemm", 700);
  rt_.finalize(c, "");
  rt_.finalize(a, "");
  EXPECT_EQ(log_.records_disabled, 2);
  EXPECT_EQ(log_.stops, 1);  // the last session stops the backend instead

  const json tb = read("b"), tc = read("c"), ta = read("a");
  EXPECT_EQ(read("b2"), tb);
  const json* timed = child(tb[0], "gemm");
  ASSERT_NE(timed, nullptr);
  EXPECT_EQ((*timed)["metrics"]["time (ns)"], 500);
  timed = child(tc[0], "gemm");
  ASSERT_NE(timed, nullptr);
  EXPECT_EQ((*timed)["metrics"]["time (ns)"], 700);
  EXPECT_EQ(child(ta[0], "gemm"), nullptr) << ta.dump();
}

TEST_F(KernelRecords, ARefusedSessionLeavesThemOff) {
  rt_.start(config("a", false));
  SessionConfig bad = config("b", true);
  bad.name = (dir_ / "no_such_dir" / "b").string();
  EXPECT_THROW(rt_.start(bad), std::invalid_argument);
  EXPECT_EQ(log_.records_enabled, 0);
  EXPECT_FALSE(log_.kernel_records);
}

TEST_F(KernelRecords, ASessionWithoutThemBesideOneTimingKernelsLeavesTheirRecordsAlone) {
  SessionId b = rt_.start(config("b", true));
  SessionId a = rt_.start(config("a", false));
  EXPECT_EQ(log_.records_enabled, 0);
  launch("gemm", 500);
  rt_.finalize(a, "");
  rt_.finalize(b, "");
  EXPECT_EQ(log_.records_disabled, 0);  // stopped with the last session, not turned off
  const json ta = read("a"), tb = read("b");
  EXPECT_EQ(child(ta[0], "gemm"), nullptr) << ta.dump();
  const json* timed = child(tb[0], "gemm");
  ASSERT_NE(timed, nullptr);
  EXPECT_EQ((*timed)["metrics"]["time (ns)"], 500);
}

TEST_F(KernelRecords, RegionsArePlacedByTheGpuClockAtOnceInBoxesOfTheirOwn) {
  // With kernel records, regions wait for their kernel's record (at most 1,024 launches of one
  // kernel wait); without, no record will come: every batch goes on the trace as it arrives,
  // with a box for its kernel drawn from the launch's extent.
  SessionId s = rt_.start(config("trace", false, "tree,trace"));
  SessionId slot = rt_.slot_for_testing(s);
  constexpr int kLaunches = 1500;
  // Global-timer ns near the backend's clock, as on a GPU (the fake's is the steady clock):
  // far from it, the trace's microseconds lose the nanoseconds compared below once the
  // machine has been up for hours.
  const uint64_t gpu_now = steady_ns();
  for (int i = 0; i < kLaunches; ++i)
    deliver(slot, gpu_now + 1000 * static_cast<uint64_t>(i));
  rt_.finalize(s, "");

  json trace = read_json("trace.chrome_trace");
  std::vector<json> regions, kernels;
  bool lane_named = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["args"]["name"] == "kernels (CTA extent)")
      lane_named = true;
    if (e["ph"] != "X") continue;
    if (e["cat"] == "region") regions.push_back(e);
    if (e["cat"] == "kernel") kernels.push_back(e);
  }
  // Each launch's box, from its CTAs' extent, on a lane of its own: no CUPTI time, no launch.
  ASSERT_EQ(kernels.size(), size_t{kLaunches});
  EXPECT_TRUE(lane_named);
  EXPECT_EQ(kernels[0]["name"], "gemm");
  EXPECT_FALSE(kernels[0]["args"].contains("time (ns)"));
  EXPECT_NEAR(kernels[0]["dur"].get<double>(), 0.095, 1e-6);
  ASSERT_EQ(regions.size(), 2u * kLaunches);
  // The first launch's regions sit inside its box.
  for (int i = 0; i < 2; ++i) {
    EXPECT_GE(regions[i]["ts"].get<double>(), kernels[0]["ts"].get<double>());
    EXPECT_LE(regions[i]["ts"].get<double>() + regions[i]["dur"].get<double>(),
              kernels[0]["ts"].get<double>() + kernels[0]["dur"].get<double>() + 1e-6);
  }
  EXPECT_EQ(regions[0]["args"]["kernel"], "gemm");
  // Launches keep their distance on the GPU clock (1 us apart), warps their offsets within one.
  double first = regions[0]["ts"].get<double>();
  EXPECT_NEAR(regions[1]["ts"].get<double>() - first, 0.010, 1e-6);
  EXPECT_NEAR(regions[2]["ts"].get<double>() - first, 1.0, 1e-6);
  EXPECT_NEAR(regions.back()["ts"].get<double>() - first, (kLaunches - 1) * 1.0 + 0.010, 1e-3);

  json tree = read("trace");
  const json* gemm = child(tree[0], "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_FALSE((*gemm)["metrics"].contains("time (ns)"));  // no kernel record, no kernel time
  const json* load = child(*gemm, "load");
  ASSERT_NE(load, nullptr);
  EXPECT_EQ((*load)["metrics"]["cycles"], 200 * kLaunches);
}

}  // namespace
}  // namespace proton
