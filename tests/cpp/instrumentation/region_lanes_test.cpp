// Region lanes of the Chrome trace: one lane per (SM, CTA, unit), named after what the unit is
// at the mode's granularity (a warp, a warpgroup, a CTA).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "common/name_table.h"
#include "data/region_metrics.h"
#include "io/chrome_trace_writer.h"

namespace proton {
namespace {

using json = nlohmann::json;

TraceEvent region(uint32_t sm, uint32_t cta, uint32_t warp, uint32_t group, uint64_t start) {
  TraceEvent e;
  e.kind = TraceEvent::kRegion;
  e.start_ns = start;
  e.end_ns = start + 100;
  e.name = NameTable::global().intern("produce");
  e.op = NameTable::global().intern("ws_kernel");
  e.stream = sm;
  e.correlation = cta;
  e.thread = warp;
  e.flags = static_cast<uint16_t>(group);
  return e;
}

std::map<uint64_t, std::string> lane_names(const std::vector<TraceEvent>& events) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "proton_region_lanes_test.json").string();
  {
    ChromeTraceWriter w(path, TraceClock{1000, 1000, 0});
    w.append(events);
    w.finish(TraceSummary{});
  }
  std::ifstream in(path);
  json trace = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  std::filesystem::remove(path);
  std::map<uint64_t, std::string> names;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"].get<uint64_t>() >= (1ull << 32))
      names[e["tid"].get<uint64_t>()] = e["args"]["name"];
  return names;
}

json write_trace(const std::vector<TraceEvent>& events, const char* file) {
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  {
    ChromeTraceWriter w(path, TraceClock{1000, 1000, 0});
    w.append(events);
    w.finish(TraceSummary{});
  }
  std::ifstream in(path);
  json trace = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  std::filesystem::remove(path);
  return trace;
}

TraceEvent async_event(uint32_t start_warp, uint32_t end_warp, uint64_t start) {
  TraceEvent e = region(2, 1, start_warp, 1, start);
  e.name = NameTable::global().intern("tma_copy");
  e.end_ns = start + 300;
  e.thread |= (end_warp + 1) << kTraceAsyncEndShift;
  return e;
}

TEST(RegionLanes, ACrossWarpAsyncEventIsAFlowFromTheStartingWarpToTheEndingOne) {
  json trace = write_trace({async_event(0, 1, 2000)}, "proton_async_flow_test.json");
  std::map<uint64_t, std::string> lanes;
  std::vector<json> slices, starts, ends;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"].get<uint64_t>() >= (1ull << 32))
      lanes[e["tid"].get<uint64_t>()] = e["args"]["name"];
    if (e["ph"] == "X" && e.value("cat", "") == "region") slices.push_back(e);
    if (e["ph"] == "s") starts.push_back(e);
    if (e["ph"] == "f") ends.push_back(e);
  }
  ASSERT_EQ(slices.size(), 2u);
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  const json& span = slices[0];
  const json& mark = slices[1];
  EXPECT_EQ(span["name"], "tma_copy");
  EXPECT_EQ(span["args"]["is_async"], true);
  EXPECT_EQ(span["args"]["warp"], 0);
  EXPECT_EQ(span["args"]["end_warp"], 1);
  EXPECT_EQ(lanes[span["tid"].get<uint64_t>()], "SM 2 / CTA 1 / warp 0");
  EXPECT_EQ(lanes[mark["tid"].get<uint64_t>()], "SM 2 / CTA 1 / warp 1");
  EXPECT_EQ(mark["dur"], 0);
  EXPECT_EQ(mark["args"]["async_end"], true);
  // The arrow leaves the span's lane at its start and lands on the end's lane at its end.
  EXPECT_EQ(starts[0]["id"], ends[0]["id"]);
  EXPECT_EQ(starts[0]["cat"], "async");
  EXPECT_EQ(starts[0]["tid"], span["tid"]);
  EXPECT_EQ(starts[0]["ts"], span["ts"]);
  EXPECT_EQ(ends[0]["tid"], mark["tid"]);
  EXPECT_EQ(ends[0]["ts"], mark["ts"]);
  EXPECT_EQ(ends[0]["bp"], "e");
  EXPECT_DOUBLE_EQ(ends[0]["ts"].get<double>() - span["ts"].get<double>(),
                   span["dur"].get<double>());
}

TEST(RegionLanes, AnAsyncEventEndedByItsOwnWarpHasNoArrowAndRegionsHaveNone) {
  json trace = write_trace({async_event(3, 3, 2000), region(2, 1, 3, 1, 2500)},
                           "proton_async_same_warp_test.json");
  int slices = 0, flows = 0, async = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e.value("cat", "") == "region") {
      ++slices;
      EXPECT_EQ(e["args"]["warp"], 3);
      if (e["args"].contains("is_async")) ++async;
    }
    if (e["ph"] == "s" || e["ph"] == "f") ++flows;
  }
  EXPECT_EQ(slices, 2);
  EXPECT_EQ(async, 1);
  EXPECT_EQ(flows, 0);
}

TEST(RegionLanes, NamedByGranularity) {
  auto names = lane_names({region(3, 0, 0, 1, 2000), region(3, 0, 1, 1, 2000),
                           region(3, 1, 4, 4, 2000), region(3, 1, 8, 8, 2000),
                           region(3, 2, 2, 2, 2000), region(3, 3, 0, kWholeCta, 2000)});
  std::multiset<std::string> got;
  for (auto& [tid, name] : names)
    got.insert(name);
  EXPECT_EQ(got, (std::multiset<std::string>{
                     "SM 3 / CTA 0 / warp 0", "SM 3 / CTA 0 / warp 1", "SM 3 / CTA 1 / warpgroup 1",
                     "SM 3 / CTA 1 / warpgroups 2-3", "SM 3 / CTA 2 / warps 2-3",
                     "SM 3 / CTA 3 / CTA (warp 0)"}));
}

TEST(RegionLanes, ARegionOfAWarpgroupSaysHowManyWarpsItStandsFor) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "proton_region_args_test.json").string();
  {
    ChromeTraceWriter w(path, TraceClock{1000, 1000, 0});
    std::vector<TraceEvent> events{region(0, 0, 4, 4, 2000), region(0, 0, 1, 1, 2000)};
    w.append(events);
    w.finish(TraceSummary{});
  }
  std::ifstream in(path);
  json trace = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  std::filesystem::remove(path);
  int seen = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "region") continue;
    ++seen;
    if (e["args"]["warp"] == 4) {
      EXPECT_EQ(e["args"]["warps"], 4);
    } else {
      EXPECT_FALSE(e["args"].contains("warps"));  // a single warp: as before
    }
  }
  EXPECT_EQ(seen, 2);
}

// As triton.profiler writes a region event: the region's name, a Chrome color per region (the
// same one for every event of it), and Triton's args beside ours: its CTA's finalization time
// and the clock its cycles were read at.
TEST(RegionLanes, RegionEventsCarryTritonsNameColorAndArgs) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "proton_region_triton_test.json").string();
  {
    ChromeTraceWriter w(path, TraceClock{1000, 1000, 0});
    TraceEvent a = region(1, 0, 0, 1, 2000);
    a.launch_ns = 640;  // finalization (ns)
    a.reserved = 1755;  // SM clock (MHz)
    TraceEvent b = a;
    b.name = NameTable::global().intern("consume");
    b.thread = 1;
    TraceEvent c = a;
    c.correlation = 1;
    c.reserved = 0;  // clock unknown: no frequency
    std::vector<TraceEvent> events{a, b, c};
    w.append(events);
    w.finish(TraceSummary{});
  }
  std::ifstream in(path);
  json trace = json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  std::filesystem::remove(path);
  std::vector<json> x;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X") x.push_back(e);
  ASSERT_EQ(x.size(), 3u);
  EXPECT_EQ(x[0]["name"], "produce");
  EXPECT_EQ(x[1]["name"], "consume");
  EXPECT_EQ(x[0]["cname"], "cq_build_passed");
  EXPECT_EQ(x[1]["cname"], "cq_build_failed");
  EXPECT_EQ(x[2]["cname"], x[0]["cname"]);  // one color per region
  EXPECT_EQ(x[0]["args"]["Finalization Time (ns)"], 640);
  EXPECT_EQ(x[0]["args"]["Frequency (MHz)"], 1755);
  EXPECT_FALSE(x[2]["args"].contains("Frequency (MHz)"));
  EXPECT_TRUE(x[0]["args"].contains("call_stack"));
  EXPECT_EQ(x[0]["args"]["kernel"], "ws_kernel");  // ours, kept
  EXPECT_EQ(x[0]["cat"], "region");
}

}  // namespace
}  // namespace proton
