#include "io/hatchet_writer.h"

#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "data/compiled_kernels.h"
#include "format/json_writer.h"
#include "hatchet_same_tree.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

TEST(JsonWriter, EscapesAndSeparates) {
  std::string out;
  JsonWriter w(out);
  w.begin_object().key("a\"b").value("x\n\x01y").key("n").begin_array().value(int64_t{-3});
  w.value(2.0).value(0.5).null().end_array().end_object();
  EXPECT_EQ(out, R"({"a\"b":"x\n\u0001y","n":[-3,2.0,0.5,null]})");
  auto j = json::parse(out);
  EXPECT_EQ(j["a\"b"], "x\n\x01y");
}

// JSON has no NaN or infinity: NaN is null (as triton.profiler writes it), +-inf is +-1e999, a
// number every JSON reader of ours and Python's json take as +-inf; -0.0 keeps its sign.
TEST(JsonWriter, NonFiniteNumbersStayValidJson) {
  std::string out;
  JsonWriter w(out);
  w.begin_array().value(std::numeric_limits<double>::quiet_NaN());
  w.value(std::numeric_limits<double>::infinity()).value(-std::numeric_limits<double>::infinity());
  w.value(-0.0).end_array();
  EXPECT_EQ(out, "[null,1e999,-1e999,-0.0]");
}

TEST(HatchetWriter, NonFiniteMetricsAreWrittenReadably) {
  CallTree t;
  auto s = t.child(CallTree::kRoot, id("step"));
  t.add_metric(s, id("loss"), std::numeric_limits<double>::quiet_NaN());
  t.add_metric(s, id("up"), std::numeric_limits<double>::infinity());
  t.add_metric(s, id("down"), -std::numeric_limits<double>::infinity());
  t.add_metric(s, id("vec"),
               std::vector<double>{1.5, std::numeric_limits<double>::quiet_NaN(),
                                   -std::numeric_limits<double>::infinity()});
  std::string text = hatchet_json(t, {}, {});
  EXPECT_NE(text.find(R"("loss":null)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("up":1e999)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("down":-1e999)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("vec":[1.5,null,-1e999])"), std::string::npos) << text;
}

// ROOT -> scope -> kernel (one launch of `ns` on CUDA device `device`): {scope, kernel}.
std::pair<CallTree::NodeId, CallTree::NodeId> scope_with_kernel(CallTree& t, const char* scope,
                                                                const char* kernel, uint64_t ns,
                                                                uint32_t device) {
  auto s = t.child(CallTree::kRoot, id(scope));
  auto k = t.child(s, id(kernel));
  t.add_kernel(k, ns, device, DeviceType::kCuda);
  return {s, k};
}

TEST(HatchetWriter, WritesTheContract) {
  CallTree t;
  auto [scope, k] = scope_with_kernel(t, "scope \"quoted\"", "_Z6kernelv", 12, 1);
  t.add_metric(scope, id("flops16"), int64_t{4});
  t.add_metric(scope, id("hist"), std::vector<int64_t>{1, 2});
  DeviceInfo d;
  d.id = 1;
  d.arch = "90";
  d.num_sms = 132;
  std::vector<DeviceInfo> devices = {d};
  json j = json::parse(hatchet_json(t, devices, {3, 2}));
  ASSERT_EQ(j.size(), 2u);
  const json& root = j[0];
  EXPECT_EQ(root["frame"], (json{{"name", "ROOT"}, {"type", "function"}}));
  EXPECT_EQ(root["metrics"]["time (ns)"], 0);
  EXPECT_EQ(root["metrics"]["count"], 0);
  EXPECT_EQ(root["metrics"]["dropped_records"], 3);
  EXPECT_EQ(root["metrics"]["unattributed_kernels"], 2);
  // Hatchet reads metric columns from the root: scalar metrics appear there as zeros.
  EXPECT_TRUE(root["metrics"]["flops16"].is_number_float());
  EXPECT_EQ(root["metrics"]["flops16"], 0.0);
  EXPECT_FALSE(root["metrics"].contains("hist"));
  const json& s = root["children"][0];
  EXPECT_EQ(s["frame"]["name"], "scope \"quoted\"");
  EXPECT_TRUE(s["metrics"]["flops16"].is_number_float());
  EXPECT_EQ(s["metrics"]["hist"], (json{1, 2}));
  const json& kernel = s["children"][0];
  EXPECT_EQ(kernel["metrics"], (json{{"time (ns)", 12},
                                     {"count", 1},
                                     {"time_min (ns)", 12},
                                     {"time_max (ns)", 12},
                                     {"device_id", "1"},
                                     {"device_type", "CUDA"}}));
  EXPECT_EQ(kernel["children"], json::array());
  EXPECT_EQ(j[1]["CUDA"]["1"]["num_sms"], 132);
  EXPECT_FALSE(j[1].contains("HIP"));
}

// An H100's SM limits, as the backend reads them from the driver.
DeviceInfo h100_with_limits() {
  DeviceInfo d;
  d.arch = "90";
  d.num_sms = 132;
  d.warp_size = 32;
  d.max_threads_per_sm = 2048;
  d.max_blocks_per_sm = 32;
  d.registers_per_sm = 65536;
  d.shared_memory_per_sm = 233472;
  d.reserved_shared_memory_per_block = 1024;
  return d;
}

TEST(HatchetWriter, LaunchFactsArePropertiesOfTheKernelNodeOnly) {
  CallTree t;
  auto [scope, k] = scope_with_kernel(t, "step", "gemm", 12, 0);
  LaunchFacts f;
  f.grid = {264, 2, 1};
  f.block = {128, 1, 1};
  f.registers_per_thread = 168;
  f.static_shared_bytes = 1024;
  f.dynamic_shared_bytes = 98304;
  f.local_bytes_per_thread = 16;
  t.note_launch(k, f);
  auto other = t.child(scope, id("copy"));
  t.add_kernel(other, 5, 0, DeviceType::kCuda);  // a kernel without facts: none written
  json j = json::parse(hatchet_json(t, {}, {}));
  const json& root = j[0];
  const json& gemm = root["children"][0]["children"][0];
  EXPECT_EQ(gemm["metrics"], (json{{"time (ns)", 12},
                                   {"count", 1},
                                   {"grid_x", 264},
                                   {"grid_y", 2},
                                   {"grid_z", 1},
                                   {"block_x", 128},
                                   {"block_y", 1},
                                   {"block_z", 1},
                                   {"registers_per_thread", 168},
                                   {"static_shared_bytes", 1024},
                                   {"dynamic_shared_bytes", 98304},
                                   {"local_bytes_per_thread", 16},
                                   {"time_min (ns)", 12},
                                   {"time_max (ns)", 12},
                                   {"device_id", "0"},
                                   {"device_type", "CUDA"}}));
  EXPECT_EQ(root["children"][0]["children"][1]["metrics"].size(), 6u);
  // Not columns of the root (Hatchet would roll them up), and kept, not summed, by our viewer.
  for (const char* name : {"grid_x", "block_x", "registers_per_thread", "local_bytes_per_thread"}) {
    EXPECT_FALSE(root["metrics"].contains(name)) << name;
    EXPECT_EQ(root["metric_rules"][name], "pty") << name;
  }
  EXPECT_FALSE(root["metric_rules"].contains("cluster_x"));  // not recorded, not written
  EXPECT_FALSE(root["metric_rules"].contains("launch_config_varies"));
  // A second configuration on the node: the last one's facts, and the change noted.
  f.grid = {16, 1, 1};
  f.cluster = {2, 1, 1};
  t.note_launch(k, f);
  j = json::parse(hatchet_json(t, {}, {}));
  const json& again = j[0]["children"][0]["children"][0]["metrics"];
  EXPECT_EQ(again["grid_x"], 16);
  EXPECT_EQ(again["cluster_x"], 2);
  EXPECT_EQ(again["launch_config_varies"], 1);
  EXPECT_EQ(j[0]["metric_rules"]["launch_config_varies"], "pty");
}

TEST(HatchetWriter, KernelNodesKeepTheirShortestAndLongestLaunch) {
  CallTree t;
  auto [scope, k] = scope_with_kernel(t, "step", "gemm", 40, 0);
  t.add_kernel(k, 10, 0, DeviceType::kCuda);
  t.add_kernel(k, 250, 0, DeviceType::kCuda);
  json j = json::parse(hatchet_json(t, {}, {}));
  const json& root = j[0];
  const json& gemm = root["children"][0]["children"][0]["metrics"];
  EXPECT_EQ(gemm["time (ns)"], 300);
  EXPECT_EQ(gemm["count"], 3);
  EXPECT_EQ(gemm["time_min (ns)"], 10);
  EXPECT_EQ(gemm["time_max (ns)"], 250);
  // Properties: never a root column Hatchet would sum, never on a frame without kernels.
  EXPECT_FALSE(root["metrics"].contains("time_min (ns)"));
  EXPECT_EQ(root["metric_rules"]["time_min (ns)"], "pty");
  EXPECT_EQ(root["metric_rules"]["time_max (ns)"], "pty");
  EXPECT_FALSE(root["children"][0]["metrics"].contains("time_max (ns)"));
}

TEST(HatchetWriter, CompiledKernelFactsJoinTheKernelNodeTheyFit) {
  CompiledKernels::global().clear();
  CallTree t;
  auto [scope, k] = scope_with_kernel(t, "step", "matmul", 12, 0);
  LaunchFacts f;
  f.grid = {64, 1, 1};
  f.block = {256, 1, 1};  // 8 warps
  f.registers_per_thread = 128;
  f.dynamic_shared_bytes = 65536;
  t.note_launch(k, f);
  auto renamed = t.child(scope, id("matmul[BLOCK_M=64]"));  // a launch_metadata name
  t.add_kernel(renamed, 7, 0, DeviceType::kCuda);
  auto other = t.child(scope, id("copy"));
  t.add_kernel(other, 5, 0, DeviceType::kCuda);
  // Two compiled variants of "matmul": only the 8-warp one fits the first node's launches.
  CompiledKernels::global().add(
      {"matmul", 4, 3, 1, 65536, 128, 0, "BLOCK_M=128, num_warps=4, num_stages=3", "mm.py:10"});
  CompiledKernels::global().add(
      {"matmul", 8, 4, 1, 65536, 128, 24, "BLOCK_M=64, num_warps=8, num_stages=4", "mm.py:10"});
  json j = json::parse(hatchet_json(t, {}, {}));
  CompiledKernels::global().clear();
  const json& root = j[0];
  const json& mm = root["children"][0]["children"][0]["metrics"];
  EXPECT_EQ(mm["triton_num_warps"], 8);
  EXPECT_EQ(mm["triton_num_stages"], 4);
  EXPECT_EQ(mm["triton_num_ctas"], 1);
  EXPECT_EQ(mm["triton_shared_bytes"], 65536);
  EXPECT_EQ(mm["triton_n_regs"], 128);
  EXPECT_EQ(mm["triton_n_spills"], 24);
  EXPECT_EQ(mm["triton_config"], "BLOCK_M=64, num_warps=8, num_stages=4");
  EXPECT_EQ(mm["triton_source"], "mm.py:10");
  // Without launch facts the two variants cannot be told apart: nothing is guessed.
  EXPECT_FALSE(root["children"][0]["children"][1]["metrics"].contains("triton_num_warps"));
  EXPECT_FALSE(root["children"][0]["children"][2]["metrics"].contains("triton_config"));
  for (const char* name : {"triton_num_warps", "triton_n_spills", "triton_config"}) {
    EXPECT_FALSE(root["metrics"].contains(name)) << name;
    EXPECT_EQ(root["metric_rules"][name], "pty") << name;
  }
}

TEST(HatchetWriter, CompiledKernelMatchesByNameThenByLaunchFacts) {
  std::vector<CompiledKernel> ks = {{"k", 4, 3, 1, 0, 32, 0, "B=1", ""},
                                    {"k", 8, 3, 1, 0, 40, 0, "B=2", ""}};
  LaunchFacts none;
  EXPECT_EQ(match_compiled(ks, "k", none), nullptr);      // two fit
  EXPECT_EQ(match_compiled(ks, "other", none), nullptr);  // none by that name
  EXPECT_EQ(match_compiled(std::span(ks).first(1), "k[B=1]", none), &ks[0]);
  EXPECT_EQ(match_compiled(std::span(ks).first(1), "kk", none), nullptr);
  LaunchFacts f;
  f.block = {256, 1, 1};
  f.registers_per_thread = 40;
  EXPECT_EQ(match_compiled(ks, "k", f), &ks[1]);
  // The only variant of that block size, even where the record's register count is the
  // driver's rounded allocation rather than the compiler's count.
  f.registers_per_thread = 48;
  EXPECT_EQ(match_compiled(ks, "k", f), &ks[1]);
  f.block = {64, 1, 1};  // no variant has two warps
  EXPECT_EQ(match_compiled(ks, "k", f), nullptr);
  // Two variants of one block size: registers and shared memory tell them apart, or nothing.
  std::vector<CompiledKernel> same_block = {{"k", 4, 3, 1, 0, 32, 0, "B=1", ""},
                                            {"k", 4, 4, 1, 1024, 40, 0, "B=2", ""}};
  f.block = {128, 1, 1};
  f.registers_per_thread = 40;
  f.dynamic_shared_bytes = 1024;
  EXPECT_EQ(match_compiled(same_block, "k", f), &same_block[1]);
  f.registers_per_thread = 48;
  EXPECT_EQ(match_compiled(same_block, "k", f), nullptr);
}

TEST(HatchetWriter, DeviceLimitsAreExtraKeysOfTheDeviceWhenKnown) {
  CallTree t;
  scope_with_kernel(t, "step", "gemm", 12, 0);
  scope_with_kernel(t, "other", "gemm", 12, 1);
  DeviceInfo known = h100_with_limits();
  DeviceInfo unknown;
  unknown.id = 1;
  unknown.arch = "80";
  std::vector<DeviceInfo> devices = {known, unknown};
  json j = json::parse(hatchet_json(t, devices, {}));
  EXPECT_EQ(j[1]["CUDA"]["0"], (json{{"arch", "90"},
                                     {"num_sms", 132},
                                     {"clock_rate", 0},
                                     {"memory_clock_rate", 0},
                                     {"bus_width", 0},
                                     {"warp_size", 32},
                                     {"max_threads_per_sm", 2048},
                                     {"max_warps_per_sm", 64},
                                     {"max_blocks_per_sm", 32},
                                     {"registers_per_sm", 65536},
                                     {"shared_memory_per_sm", 233472},
                                     {"reserved_shared_memory_per_block", 1024}}));
  EXPECT_EQ(j[1]["CUDA"]["1"].size(), 5u);  // as before: no limits, no keys
}

TEST(HatchetWriter, DeepTreesDoNotRecurse) {
  CallTree t;
  CallTree::NodeId n = CallTree::kRoot;
  for (int i = 0; i < 100000; ++i)
    n = t.child(n, id("f"));
  std::string out = hatchet_json(t, {}, {});
  EXPECT_EQ(out.substr(0, 2), "[{");
  EXPECT_EQ(out.back(), '\n');
}

TEST(HatchetWriter, RootKeepsItsOwnValueForAColumn) {
  CallTree t;
  t.add_metric(CallTree::kRoot, id("bytes"), int64_t{7});
  t.add_metric(t.child(CallTree::kRoot, id("a")), id("bytes"), int64_t{1});
  std::string text = hatchet_json(t, {}, {});
  json j = json::parse(text);
  EXPECT_EQ(j[0]["metrics"], (json{{"bytes", 7}}));
  EXPECT_EQ(text.find("\"bytes\":0"), std::string::npos);  // no duplicate key
}

TEST(HatchetWriter, EmptyTreeHasNoKernelColumns) {
  CallTree t;
  json j = json::parse(hatchet_json(t, {}, {}));
  EXPECT_EQ(j[0]["metrics"], json::object());
  EXPECT_EQ(j[1], json::object());
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// A metric that shares a name with a column proton writes itself (launch metadata or
// add_metrics saying "count") must not become a second key: JSON parsers disagree on those.
TEST(HatchetWriter, MetricsNamedLikeKernelColumnsAreNotWrittenTwice) {
  CallTree t;
  auto [scope, k] = scope_with_kernel(t, "s", "kern", 5, 0);
  t.add_metric(k, id("count"), int64_t{9});
  t.add_metric(k, id("device_type"), int64_t{1});
  t.add_metric(k, id("bytes"), int64_t{4});
  t.add_metric(scope, id("time (ns)"), 2.5);
  std::string out = hatchet_json(t, {}, {});
  EXPECT_EQ(occurrences(out, "\"count\""), 2u) << out;  // root and kernel, once each
  EXPECT_EQ(occurrences(out, "\"device_type\""), 1u) << out;
  EXPECT_EQ(occurrences(out, "\"time (ns)\""), 3u) << out;  // root, scope, kernel
  json j = json::parse(out);
  const json& kernel = j[0]["children"][0]["children"][0];
  EXPECT_EQ(kernel["metrics"]["count"], 1);
  EXPECT_EQ(kernel["metrics"]["bytes"], 4);
  EXPECT_EQ(j[0]["children"][0]["metrics"]["time (ns)"], 2.5);  // not a kernel: kept
}

TEST(HatchetWriter, RuleSuffixesAreRemovedAndRecordedOnTheRoot) {
  CallTree t;
  auto a = t.child(CallTree::kRoot, id("a"));
  auto b = t.child(a, id("b"));
  t.add_metric(a, id("peak (exc)"), int64_t{5});
  t.add_metric(b, id("peak (exc)"), int64_t{3});
  t.add_metric(b, id("dtype(pty)"), std::string("bf16"));
  t.add_metric(b, id("n"), int64_t{1});
  for (bool msgpack : {false, true}) {
    json j = msgpack ? json::from_msgpack(hatchet_msgpack(t, {}, {}))
                     : json::parse(hatchet_json(t, {}, {}));
    const json& root = j[0];
    EXPECT_EQ(root["metric_rules"], (json{{"peak", "exc"}, {"dtype", "pty"}}));
    // Columns for Hatchet: summed scalars only. The exclusive "peak" is written, as Triton
    // writes it, only where it was recorded; string metrics have no column.
    EXPECT_EQ(root["metrics"], (json{{"n", 0}}));
    EXPECT_EQ(root["children"][0]["metrics"], (json{{"peak", 5}}));
    EXPECT_EQ(root["children"][0]["children"][0]["metrics"],
              (json{{"peak", 3}, {"dtype", "bf16"}, {"n", 1}}));
    EXPECT_FALSE(root["children"][0].contains("metric_rules"));
  }
}

TEST(HatchetWriter, ExclusiveMetricsOnlyWhereRecorded) {
  // Triton writes an exclusive metric on the nodes that recorded it and nowhere else: the root
  // has it only with its own value, and a float "(exc)" metric gets no 0.0 column either.
  CallTree t;
  auto a = t.child(CallTree::kRoot, id("a"));
  t.add_metric(a, id("cpu_time (ns)(exc)"), int64_t{40});
  t.add_metric(a, id("ratio (exc)"), 0.5);
  t.add_metric(t.child(a, id("b")), id("ratio (exc)"), 0.25);
  for (bool msgpack : {false, true}) {
    json j = msgpack ? json::from_msgpack(hatchet_msgpack(t, {}, {}))
                     : json::parse(hatchet_json(t, {}, {}));
    EXPECT_EQ(j[0]["metrics"], json::object());
    EXPECT_EQ(j[0]["metric_rules"], (json{{"cpu_time (ns)", "exc"}, {"ratio", "exc"}}));
    EXPECT_EQ(j[0]["children"][0]["metrics"], (json{{"cpu_time (ns)", 40}, {"ratio", 0.5}}));
  }
  t.add_metric(CallTree::kRoot, id("ratio (exc)"), 2.0);
  EXPECT_EQ(json::parse(hatchet_json(t, {}, {}))[0]["metrics"], (json{{"ratio", 2.0}}));
}

TEST(HatchetWriter, NoRulesKeyWithoutSuffixedMetrics) {
  CallTree t;
  t.add_metric(t.child(CallTree::kRoot, id("a")), id("n"), int64_t{1});
  EXPECT_FALSE(json::parse(hatchet_json(t, {}, {}))[0].contains("metric_rules"));
}

TEST(HatchetWriter, EmptyNodesAreWritten) {
  CallTree t;
  t.child(t.child(CallTree::kRoot, id("load")), id("decode"));
  json root = json::parse(hatchet_json(t, {}, {}))[0];
  EXPECT_EQ(root["children"][0]["frame"]["name"], "load");
  EXPECT_EQ(root["children"][0]["metrics"], json::object());
  EXPECT_EQ(root["children"][0]["children"][0]["frame"]["name"], "decode");
}

// The session's bytes are the format's reference: the viewer's writers are checked against the
// same bytes (hatchet_same_tree.h), so control characters, DEL, invalid UTF-8 and non-finite
// numbers are written one way by every writer.
TEST(HatchetWriter, WritesTheReferenceBytes) {
  CallTree t;
  auto odd = t.child(CallTree::kRoot, id(same_tree::kOddName));
  t.add_metric(odd, id("n"), int64_t{3});
  t.add_metric(odd, id("x"), std::numeric_limits<double>::quiet_NaN());
  t.add_metric(odd, id("up"), std::numeric_limits<double>::infinity());
  t.add_metric(odd, id("down"), -std::numeric_limits<double>::infinity());
  t.add_metric(odd, id("s"), std::string(same_tree::kOddText));
  auto k = t.child(odd, id("k"));
  t.add_kernel(k, 12, 0, DeviceType::kCuda);
  LaunchFacts f;
  f.grid = {264, 1, 1};
  f.block = {384, 1, 1};
  f.cluster = {2, 1, 1};
  f.registers_per_thread = 168;
  f.static_shared_bytes = 0;
  f.dynamic_shared_bytes = 200704;
  f.local_bytes_per_thread = 0;
  t.note_launch(k, f);
  DeviceInfo d = h100_with_limits();
  d.clock_rate = 1755000;
  d.memory_clock_rate = 2619000;
  d.bus_width = 5120;
  std::vector<DeviceInfo> devices = {d};
  EXPECT_EQ(hatchet_json(t, devices, {}), same_tree::kJson);
  EXPECT_EQ(hatchet_msgpack(t, devices, {}), same_tree::bytes(same_tree::kMsgpackHex));
}

}  // namespace
}  // namespace proton
