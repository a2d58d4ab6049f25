// Trace sessions end to end on synthetic records: the Chrome trace rules, lanes, flows, CPU
// scopes from several threads, the flight-recorder budget, streaming of large traces and
// launch metadata (hook="triton") on kernel events.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <tuple>

#include "attribution/graph_registry.h"
#include "attribution/launch_stage.h"
#include "common/version.h"
#include "context/context_tree.h"
#include "context/launch_ops.h"
#include "context/scope_metric_sets.h"
#include "data/trace_store.h"
#include "io/chrome_trace_writer.h"
#include "io/run_info.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::id;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::pair<int64_t, int64_t> lane(const json& e) {
  return {e["pid"].get<int64_t>(), e["tid"].get<int64_t>()};
}

/// Checks the rules every Chrome trace we write must follow; returns the events by phase.
std::map<std::string, std::vector<json>> check_chrome_rules(const json& trace) {
  std::map<std::string, std::vector<json>> by_ph;
  EXPECT_TRUE(trace.contains("traceEvents"));
  EXPECT_EQ(trace["displayTimeUnit"], "ns");
  EXPECT_GT(trace["otherData"]["proton_base_time_ns"].get<uint64_t>(), 0u);
  EXPECT_EQ(trace["baseTimeNanoseconds"], trace["otherData"]["proton_base_time_ns"]);
  // The versions come from the one generated header, as in the Hatchet files.
  EXPECT_EQ(trace["otherData"]["proton_version"], proton_version());
  EXPECT_EQ(trace["otherData"]["proton_format_version"], kFormatVersion);
  std::set<std::pair<int64_t, int64_t>> named_threads, used_threads;
  std::set<int64_t> named_processes, used_processes;
  std::map<uint64_t, int> flow_starts, flow_ends;
  for (const json& e : trace["traceEvents"]) {
    std::string ph = e["ph"];
    by_ph[ph].push_back(e);
    if (ph == "X") {
      for (const char* k : {"ts", "dur", "pid", "tid", "name"})
        EXPECT_TRUE(e.contains(k)) << k << " missing in " << e.dump();
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      used_threads.insert(lane(e));
      used_processes.insert(e["pid"].get<int64_t>());
    } else if (ph == "M") {
      if (e["name"] == "thread_name") named_threads.insert(lane(e));
      if (e["name"] == "process_name") named_processes.insert(e["pid"].get<int64_t>());
      EXPECT_TRUE(e["args"].contains("name") || e["args"].contains("sort_index")) << e.dump();
    } else if (ph == "s" || ph == "f") {
      for (const char* k : {"ts", "pid", "tid", "id"})
        EXPECT_TRUE(e.contains(k)) << k << " missing in " << e.dump();
      EXPECT_EQ(e["bp"], "e");
      (ph == "s" ? flow_starts : flow_ends)[e["id"].get<uint64_t>()]++;
      used_threads.insert(lane(e));
    }
  }
  for (const auto& t : used_threads)
    EXPECT_TRUE(named_threads.count(t)) << "lane " << t.first << "/" << t.second << " unnamed";
  for (int64_t p : used_processes)
    EXPECT_TRUE(named_processes.count(p)) << "process " << p << " unnamed";
  EXPECT_EQ(flow_starts.size(), flow_ends.size());
  for (const auto& [flow, n] : flow_starts) {
    EXPECT_EQ(n, 1) << "flow " << flow;
    EXPECT_EQ(flow_ends[flow], 1) << "flow " << flow << " has no end";
  }
  return by_ph;
}

class Traces : public testing::RuntimeFixture {
 protected:
  Traces() : RuntimeFixture("proton_trace_test_", 50000) {}
  SessionConfig config(const std::string& name, const std::string& data) {
    SessionConfig c = RuntimeFixture::config(name);
    c.data = data;
    return c;
  }
  /// Launches now; the kernel runs 2 µs later for `ns` on `stream` of `device`.
  void launch(const std::string& kernel, uint64_t ns, uint32_t stream = 7, uint32_t device = 0) {
    LaunchStage::tag(++correlation_);
    KernelRecord r;
    r.correlation = correlation_;
    r.start_ns = now_ns() + 2000;
    r.end_ns = r.start_ns + ns;
    r.name = id(kernel);
    r.stream_id = stream;
    r.device_id = device;
    fake_->complete(r);
  }
};

TEST_F(Traces, TreeAndTraceFromOneSession) {
  SessionId s = rt_.start(config("both", "tree,trace"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("step"));
  launch("gemm", 1500, 7, 0);
  launch("gemm", 500, 8, 1);
  tc.exit_scope(id("step"));
  std::thread worker([&] {
    auto& wc = ThreadContext::current();
    wc.enter_scope(id("loader"));
    LaunchStage::tag(900001);
    wc.exit_scope(id("loader"));
  });
  worker.join();
  KernelRecord r;
  r.correlation = 900001;
  r.start_ns = now_ns();
  r.end_ns = r.start_ns + 100;
  r.name = id("copy");
  r.stream_id = 3;
  fake_->complete(r);
  rt_.finalize(s, "");

  json tree = read("both");
  EXPECT_EQ(tree[0]["children"][0]["frame"]["name"], "step");
  json trace = read_json("both.chrome_trace");
  auto events = check_chrome_rules(trace);
  std::vector<json> kernels, scopes, launches;
  for (const json& e : events["X"]) {
    if (e["cat"] == "kernel") kernels.push_back(e);
    if (e["cat"] == "scope") scopes.push_back(e);
    if (e["cat"] == "launch") launches.push_back(e);
  }
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(launches.size(), 3u);
  EXPECT_EQ(events["s"].size(), 3u);
  std::set<std::pair<int64_t, int64_t>> lanes;
  for (const json& k : kernels) {
    lanes.insert(lane(k));
    if (k["name"] == "gemm") {
      // As triton.profiler writes it: the root, the scopes, then the kernel's own name.
      EXPECT_EQ(k["args"]["call_stack"], json::array({"ROOT", "step", "gemm"}));
      EXPECT_TRUE(k["args"]["time (ns)"] == 1500 || k["args"]["time (ns)"] == 500);
      EXPECT_NEAR(k["dur"].get<double>() * 1000, k["args"]["time (ns)"].get<double>(), 0.5);
    } else {
      EXPECT_EQ(k["args"]["call_stack"], json::array({"ROOT", "loader", k["name"]}));
    }
  }
  EXPECT_EQ(lanes, (std::set<std::pair<int64_t, int64_t>>{{0, 7}, {1, 8}, {0, 3}}));
  ASSERT_EQ(scopes.size(), 2u);
  EXPECT_NE(scopes[0]["tid"], scopes[1]["tid"]);  // one lane per thread
  for (const json& sc : scopes) {
    EXPECT_TRUE(sc["name"] == "step" || sc["name"] == "loader");
    EXPECT_GE(sc["ts"].get<double>(), 0.0);
  }
  // The launch precedes its kernel on the common time line.
  for (const json& l : launches) {
    for (const json& k : kernels) {
      if (k["args"]["correlation"] == l["args"]["correlation"]) {
        EXPECT_LE(l["ts"].get<double>(), k["ts"].get<double>());
      }
    }
  }
  EXPECT_EQ(trace["otherData"]["proton_dropped_events"], 0);
  EXPECT_FALSE(fs::exists(dir_ / "both.hatchet_msgpack"));
}

TEST_F(Traces, TraceOnlyWritesNoTreeAndRejectsTreeFormats) {
  SessionId s = rt_.start(config("t", "trace"));
  launch("k", 10);
  EXPECT_THROW(rt_.finalize(s, "hatchet"), std::invalid_argument);
  EXPECT_THROW(rt_.hatchet_json(s), std::invalid_argument);
  EXPECT_TRUE(rt_.has_sessions());
  rt_.finalize(s, "chrome_trace");
  EXPECT_FALSE(fs::exists(dir_ / "t.hatchet"));
  auto events = check_chrome_rules(read_json("t.chrome_trace"));
  EXPECT_EQ(events["X"].size(), 2u);  // kernel + launch
}

TEST_F(Traces, FormatErrorsAreClear) {
  SessionId s = rt_.start(config("tree", "tree"));
  try {
    rt_.finalize(s, "chrome_trace");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("data='trace'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rt_.finalize(s, "hatchet,xml"), std::invalid_argument);
  rt_.finalize(s, "hatchet,hatchet_msgpack");
  EXPECT_TRUE(fs::exists(dir_ / "tree.hatchet"));
  EXPECT_TRUE(fs::exists(dir_ / "tree.hatchet_msgpack"));
  EXPECT_THROW(rt_.start(config("bad", "timeline")), std::invalid_argument);
  SessionConfig flush = config("f", "trace");
  flush.mode = "periodic_flushing";
  EXPECT_THROW(rt_.start(flush), std::invalid_argument);
  flush.data = "tree";
  flush.mode = "periodic_flushing:format=chrome_trace";
  EXPECT_THROW(rt_.start(flush), std::invalid_argument);
}

TEST_F(Traces, BudgetKeepsTheNewestEventsAndReportsTheRest) {
  SessionConfig c = config("ring", "trace");
  c.trace_budget_bytes = 2 * TraceStore::kChunkBytes;
  SessionId s = rt_.start(c);
  const int total = 3 * static_cast<int>(TraceStore::kChunkEvents) + 10;
  for (int i = 0; i < total; ++i) {
    LaunchStage::tag(++correlation_);
    KernelRecord r;
    r.correlation = correlation_;
    r.start_ns = now_ns() + static_cast<uint64_t>(i);
    r.end_ns = r.start_ns + 1;
    r.name = id("tiny");
    fake_->complete(r);
  }
  rt_.finalize(s, "");
  json trace = read_json("ring.chrome_trace");
  auto events = check_chrome_rules(trace);
  size_t kernels = 0;
  for (const json& e : events["X"])
    kernels += e["cat"] == "kernel";
  uint64_t dropped = trace["otherData"]["proton_dropped_events"];
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(kernels + dropped, static_cast<size_t>(total));
  EXPECT_LE(kernels, 2 * TraceStore::kChunkEvents);
  ASSERT_EQ(events["i"].size(), 1u);  // the marker where the kept window starts
  EXPECT_EQ(trace["otherData"]["proton_trace_budget_bytes"], c.trace_budget_bytes);
}

/// The whole file, in one read (a character at a time through istreambuf_iterator, reading the
/// ~40 MB traces below took most of their time under TSan).
std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(fs::file_size(path), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  EXPECT_TRUE(in) << "could not read " << path;
  return text;
}

TEST_F(Traces, LargeTracesStreamToDisk) {
  SessionId s = rt_.start(config("big", "trace"));
  const size_t total = (TraceStore::kResidentChunks + 4) * TraceStore::kChunkEvents;
  for (size_t i = 0; i < total; ++i) {
    LaunchStage::tag(++correlation_);
    KernelRecord r;
    r.correlation = correlation_;
    r.start_ns = now_ns();
    r.end_ns = r.start_ns + 5;
    r.name = id("stream_me");
    fake_->complete(r);
    if (i % 8192 == 0) rt_.deactivate(s, /*flush=*/true), rt_.activate(s);
  }
  rt_.deactivate(s, true);
  // Spilled chunks are already in the partial file before finalize.
  bool partial = false;
  for (const auto& f : fs::directory_iterator(dir_))
    partial = partial || f.path().filename().string().rfind("big.chrome_trace.partial", 0) == 0;
  EXPECT_TRUE(partial);
  rt_.finalize(s, "");
  // Parsing ~40 MB with a DOM takes minutes under TSan: count the kernel events as text and
  // parse only the trailer (the rules are checked on the smaller traces above).
  std::string text = read_text(dir_ / "big.chrome_trace");
  size_t kernels = 0;
  for (size_t at = text.find("\"cat\":\"kernel\""); at != std::string::npos;
       at = text.find("\"cat\":\"kernel\"", at + 1))
    ++kernels;
  EXPECT_EQ(kernels, total);
  size_t trailer = text.rfind("\n],");
  ASSERT_NE(trailer, std::string::npos);
  json tail = json::parse("{" + text.substr(trailer + 3));
  EXPECT_EQ(tail["otherData"]["proton_recorded_events"], total);
  EXPECT_EQ(text.compare(0, 16, "{\"traceEvents\":["), 0);
  for (const auto& f : fs::directory_iterator(dir_))
    EXPECT_EQ(f.path().string().find(".partial"), std::string::npos) << f.path();
}

/// The events (one per line, as the writer puts them) whose text contains `needle`.
std::vector<json> events_containing(const std::string& text, const std::string& needle) {
  std::vector<json> out;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    size_t begin = text.rfind('\n', at) + 1;
    std::string line = text.substr(begin, text.find('\n', at) - begin);
    if (!line.empty() && line.back() == ',') line.pop_back();
    out.push_back(json::parse(line));
  }
  return out;
}

std::vector<json> kernel_events(const json& trace) {
  std::vector<json> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "kernel") out.push_back(e);
  }
  return out;
}

// Events formatted at finalize (the resident tail): the op's name and metrics, typed as the
// tree types them, and the tree's sums equal the trace's per-launch values added up.
TEST_F(Traces, LaunchMetadataNamesKernelEventsAndAddsTheirMetrics) {
  SessionId s = rt_.start(config("md", "tree,trace"));
  uint32_t op = LaunchOps::global().intern(id("matmul_1024x1024"),
                                           {{id("flops16"), 2.0e9}, {id("bytes"), int64_t{4096}}});
  uint32_t unnamed = LaunchOps::global().intern(kNoName, {{id("bytes"), int64_t{64}}});
  uint32_t clash = LaunchOps::global().intern(id("clash"), {{id("correlation"), int64_t{-1}}});
  ThreadContext::current().enter_scope(id("step"));
  for (int i = 0; i < 3; ++i) {
    LaunchOps::set_pending(op);
    launch("matmul_kernel", 100);
  }
  launch("matmul_kernel", 50);  // no metadata
  LaunchOps::set_pending(unnamed);
  launch("copy_kernel", 10);
  LaunchOps::set_pending(clash);
  launch("clash_kernel", 10);
  ThreadContext::current().exit_scope(id("step"));
  rt_.finalize(s, "");

  json trace = read_json("md.chrome_trace");
  auto events = check_chrome_rules(trace);
  std::map<std::string, std::vector<json>> by_name;
  for (const json& k : kernel_events(trace))
    by_name[k["name"]].push_back(k);
  ASSERT_EQ(by_name["matmul_1024x1024"].size(), 3u) << trace.dump(1);
  double flops = 0;
  int64_t bytes = 0;
  for (const json& k : by_name["matmul_1024x1024"]) {
    const json& args = k["args"];
    EXPECT_EQ(args["kernel"], "matmul_kernel");
    EXPECT_EQ(args["call_stack"], json::array({"ROOT", "step", "matmul_1024x1024"}));
    EXPECT_EQ(args["time (ns)"], 100);
    ASSERT_TRUE(args["flops16"].is_number_float()) << args.dump();
    ASSERT_TRUE(args["bytes"].is_number_integer()) << args.dump();
    flops += args["flops16"].get<double>();
    bytes += args["bytes"].get<int64_t>();
  }
  EXPECT_DOUBLE_EQ(flops, 6.0e9);
  EXPECT_EQ(bytes, 3 * 4096);
  ASSERT_EQ(by_name["matmul_kernel"].size(), 1u);
  const json& plain = by_name["matmul_kernel"][0]["args"];
  EXPECT_FALSE(plain.contains("kernel") || plain.contains("flops16") || plain.contains("bytes"))
      << plain.dump();
  // An op without a name keeps the kernel's own and needs no "kernel" arg.
  ASSERT_EQ(by_name["copy_kernel"].size(), 1u);
  EXPECT_FALSE(by_name["copy_kernel"][0]["args"].contains("kernel"));
  EXPECT_EQ(by_name["copy_kernel"][0]["args"]["bytes"], 64);
  // A metric named like one of our own args is not written twice (the event's own wins).
  ASSERT_EQ(by_name["clash"].size(), 1u);
  EXPECT_GT(by_name["clash"][0]["args"]["correlation"].get<int64_t>(), 0);
  EXPECT_EQ(read_text(dir_ / "md.chrome_trace").find("\"correlation\":-1"), std::string::npos);
  // The launch slice names the kernel as its kernel event does.
  for (const json& l : events["X"]) {
    if (l["cat"] != "launch") continue;
    for (const json& k : kernel_events(trace)) {
      if (k["args"]["correlation"] == l["args"]["correlation"]) {
        EXPECT_EQ(l["args"]["kernel"], k["name"]);
      }
    }
  }
  // The tree, from the same session, holds the same name and the sums.
  json tree = read("md")[0];
  const json* step = child(tree, "step");
  ASSERT_NE(step, nullptr);
  const json* node = child(*step, "matmul_1024x1024");
  ASSERT_NE(node, nullptr);
  EXPECT_DOUBLE_EQ((*node)["metrics"]["flops16"].get<double>(), flops);
  EXPECT_EQ((*node)["metrics"]["bytes"], bytes);
}

// Events spilled to the partial file while the session runs resolve their op there, and the
// tail formatted at finalize does too.
TEST_F(Traces, LaunchMetadataSurvivesStreamingAndFinalize) {
  SessionId s = rt_.start(config("md_stream", "trace"));
  uint32_t op = LaunchOps::global().intern(
      id("attention_fwd_s4096"), {{id("flops"), 1.5e12}, {id("bytes"), int64_t{1} << 33}});
  // One chunk more than stays resident: the first chunk is spilled before finalize.
  const size_t total = TraceStore::kResidentChunks * TraceStore::kChunkEvents + 1;
  for (size_t i = 0; i < total; ++i) {
    if (i == 0 || i + 1 == total) LaunchOps::set_pending(op);
    launch("attn_kernel", 5);
  }
  rt_.deactivate(s, /*flush=*/true);
  const std::string renamed = "\"name\":\"attention_fwd_s4096\"";
  auto check = [](const json& k) {
    EXPECT_EQ(k["cat"], "kernel");
    EXPECT_EQ(k["args"]["kernel"], "attn_kernel");
    EXPECT_TRUE(k["args"]["flops"].is_number_float());
    EXPECT_DOUBLE_EQ(k["args"]["flops"].get<double>(), 1.5e12);
    EXPECT_EQ(k["args"]["bytes"].get<int64_t>(), int64_t{1} << 33);
  };
  std::vector<json> spilled;
  for (const auto& f : fs::directory_iterator(dir_)) {
    if (f.path().filename().string().rfind("md_stream.chrome_trace.partial", 0) == 0)
      spilled = events_containing(read_text(f.path()), renamed);
  }
  ASSERT_EQ(spilled.size(), 1u) << "the first chunk was not spilled before finalize";
  check(spilled[0]);
  rt_.finalize(s, "");

  // Too large to parse as a DOM under TSan: find the two events in the text, parse those.
  std::vector<json> written =
      events_containing(read_text(dir_ / "md_stream.chrome_trace"), renamed);
  ASSERT_EQ(written.size(), 2u);
  for (const json& k : written)
    check(k);
  EXPECT_EQ(written[0], spilled[0]);
  EXPECT_LT(written[0]["args"]["correlation"], written[1]["args"]["correlation"]);
}

// A graph replay carries the metadata of the captured launch (GraphAttribution::replay_tag).
TEST_F(Traces, GraphReplaysCarryTheCapturedLaunchMetadata) {
  SessionId s = rt_.start(config("md_graph", "trace"));
  uint32_t op = LaunchOps::global().intern(id("gemm_128"), {{id("flops8"), 4096.0}});
  GraphRegistry& registry = GraphRegistry::global();
  CaptureSite with_op{ThreadContext::launch_context(), kRootContext, op};
  CaptureSite without{ThreadContext::launch_context(), kRootContext, 0};
  registry.node_created(0xC001, 0xC0, GraphNodeKind::kKernel, &with_op);
  registry.node_created(0xC002, 0xC0, GraphNodeKind::kKernel, &without);
  uint32_t fanout = registry.exec_created(0xC1, 0xC0);
  ASSERT_EQ(fanout, 2u);
  for (uint64_t replay = 0; replay < 3; ++replay) {
    uint64_t c = ++correlation_;
    LaunchStage::tag(c, fanout);
    for (uint64_t node : {0xC001, 0xC002}) {
      KernelRecord r;
      r.correlation = c;
      r.start_ns = now_ns() + 1000;
      r.end_ns = r.start_ns + 10;
      r.name = id(node == 0xC001 ? "gemm_kernel" : "relu_kernel");
      r.graph_id = 0xC1;
      r.graph_node_id = node;
      fake_->complete(r);
    }
  }
  rt_.finalize(s, "");
  json trace = read_json("md_graph.chrome_trace");
  check_chrome_rules(trace);
  size_t gemm = 0, relu = 0;
  for (const json& k : kernel_events(trace)) {
    if (k["name"] == "gemm_128") {
      ++gemm;
      EXPECT_EQ(k["args"]["kernel"], "gemm_kernel");
      EXPECT_DOUBLE_EQ(k["args"]["flops8"].get<double>(), 4096.0);
    } else {
      ++relu;
      EXPECT_EQ(k["name"], "relu_kernel");
      EXPECT_FALSE(k["args"].contains("flops8"));
    }
  }
  EXPECT_EQ(gemm, 3u);
  EXPECT_EQ(relu, 3u);
}

// As triton.profiler writes CPU scopes: every scope event carries args.scope_id (one per
// instance); a scope given metrics becomes a "metric" event named "<scope>: <name, value>, ..."
// with the metrics, as strings, in args.metrics.
TEST_F(Traces, ScopeEventsCarryTheirIdAndTheirMetrics) {
  SessionId s = rt_.start(config("sm", "tree,trace"));
  auto& tc = ThreadContext::current();
  using Metrics = std::vector<std::pair<NameId, MetricValue>>;
  Metrics first{{id("flops"), int64_t{5}}, {id("peak (exc)"), 2.5}};
  Metrics second{{id("flops"), int64_t{3}}, {id("dtype"), std::string("bf16")}};
  for (int i = 0; i < 2; ++i) {
    tc.enter_scope(id("step"));
    rt_.add_metrics(first);
    rt_.add_metrics(second);
    tc.exit_scope(id("step"));
  }
  tc.enter_scope(id("plain"));
  tc.exit_scope(id("plain"));
  rt_.finalize(s, "");
  auto events = check_chrome_rules(read_json("sm.chrome_trace"));
  std::vector<json> metric_events, scopes;
  for (const json& e : events["X"]) {
    if (e["cat"] == "metric") metric_events.push_back(e);
    if (e["cat"] == "scope") scopes.push_back(e);
  }
  ASSERT_EQ(metric_events.size(), 2u);
  ASSERT_EQ(scopes.size(), 1u);
  std::set<uint64_t> ids;
  for (const json& e : metric_events) {
    EXPECT_EQ(e["name"], "step: <dtype, bf16>, <flops, 8>, <peak, 2.500000>");
    EXPECT_EQ(e["args"]["metrics"],
              (json{{"dtype", "bf16"}, {"flops", "8"}, {"peak", "2.500000"}}));
    EXPECT_EQ(e["args"]["call_stack"], (json{"step"}));
    ids.insert(e["args"]["scope_id"].get<uint64_t>());
  }
  EXPECT_EQ(scopes[0]["name"], "plain");
  EXPECT_FALSE(scopes[0]["args"].contains("metrics"));
  ids.insert(scopes[0]["args"]["scope_id"].get<uint64_t>());
  EXPECT_EQ(ids.size(), 3u);  // one id per scope instance
  // The tree still sums the metrics over both instances.
  EXPECT_EQ((*child(read("sm")[0], "step"))["metrics"]["flops"], 16);
}

// A value added to a scope every step (a loss, a step number) is a new set of metrics each
// time: the trace holds a set per scope event it keeps and gives each back when the event
// leaves (written or dropped), so the process does not keep one per step.
TEST_F(Traces, ScopeMetricsOfEveryStepAreGivenBackWithTheirEvents) {
  ScopeMetricSets& sets = ScopeMetricSets::global();
  const size_t live_before = sets.live();
  const size_t ops_before = LaunchOps::global().size();
  SessionConfig c = config("steps", "trace");
  SessionId s = rt_.start(c);
  auto& tc = ThreadContext::current();
  constexpr int kSteps = 2000;
  for (int i = 0; i < kSteps; ++i) {
    tc.enter_scope(id("step"));
    rt_.add_metrics(std::vector<std::pair<NameId, MetricValue>>{{id("loss"), 1.0 + i}});
    tc.exit_scope(id("step"));
    if (i % 500 == 499) fake_->flush();  // the record thread's flushes
  }
  fake_->flush();
  EXPECT_EQ(LaunchOps::global().size(), ops_before);  // nothing interned per step
  EXPECT_LE(sets.live(), live_before + kSteps);       // held by the trace's events
  rt_.finalize(s, "");
  EXPECT_EQ(sets.live(), live_before);  // the trace is written: every set given back
  auto events = check_chrome_rules(read_json("steps.chrome_trace"));
  size_t metric_events = 0;
  for (const json& e : events["X"])
    metric_events += e["cat"] == "metric" ? 1 : 0;
  EXPECT_EQ(metric_events, static_cast<size_t>(kSteps));
}

// The writer alone over synthetic events: a scope event's op holds its metrics, its
// correlation field its instance id; lists print as "[a,b]".
TEST(ChromeTraceWriterUnit, ScopeMetricEventsFromSyntheticEvents) {
  testing::MainThreadFixture main;
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("outer"));
  tc.enter_scope(id("inner"));
  ContextId inner = tc.scope_context();
  tc.exit_scope(id("inner"));
  tc.exit_scope(id("outer"));
  fs::path path = fs::temp_directory_path() /
                  ("proton_trace_unit_" + std::to_string(::getpid()) + ".chrome_trace");
  ChromeTraceWriter w(path.string(), TraceClock{1000, 1, 0});
  TraceEvent metric;
  metric.kind = TraceEvent::kScope;
  metric.start_ns = 2000;
  metric.end_ns = 3500;
  metric.context = inner;
  metric.name = id("inner");
  metric.thread = 4;
  metric.correlation = 41;
  metric.op = ScopeMetricSets::global().add(
      {{id("v"), std::vector<int64_t>{1, 2}}, {id("cpu_time (ns)(exc)"), int64_t{7}}});
  TraceEvent plain = metric;
  plain.correlation = 42;
  plain.op = 0;
  std::vector<TraceEvent> batch{metric, plain};
  w.append(batch);
  w.finish(TraceSummary{});
  ScopeMetricSets::global().release(metric.op);
  std::ifstream in(path);
  json trace = json::parse(in);
  fs::remove(path);
  std::vector<json> x;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X") x.push_back(e);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]["cat"], "metric");
  EXPECT_EQ(x[0]["name"], "inner: <cpu_time (ns), 7>, <v, [1,2]>");
  EXPECT_EQ(x[0]["args"]["metrics"], (json{{"cpu_time (ns)", "7"}, {"v", "[1,2]"}}));
  EXPECT_EQ(x[0]["args"]["call_stack"], (json{"outer", "inner"}));
  EXPECT_EQ(x[0]["args"]["scope_id"], 41);
  EXPECT_EQ(x[0]["ts"], 1.0);
  EXPECT_EQ(x[1]["cat"], "scope");
  EXPECT_EQ(x[1]["name"], "inner");
  EXPECT_EQ(x[1]["args"], (json{{"call_stack", {"outer", "inner"}}, {"scope_id", 42}}));
}

// Replayed graph kernels: their captured frames become slices on the stream's graph lane,
// each spanning the kernels under it (frames from "<captured_at>" down, compared by name, as
// triton.profiler's trace writer builds them); other kernels leave them open.
TEST(ChromeTraceWriterUnit, ReplayedGraphScopesGetTheirOwnLaneOnGpuTime) {
  auto& tree = ContextTree::global();
  auto path = [&](std::initializer_list<const char*> names) {
    ContextId c = kRootContext;
    for (const char* n : names)
      c = tree.child(c, id(n));
    return c;
  };
  ContextId l1 = path({"decode", "<captured_at>", "capture", "layer1"});
  ContextId l2 = path({"decode", "<captured_at>", "capture", "layer2"});
  ContextId md = path({"decode", "<captured_at>", "capture", "__proton_launch_metadata"});
  ContextId other = path({"eager"});
  ContextId again = path({"step2", "<captured_at>", "capture", "layer1"});
  fs::path file = fs::temp_directory_path() /
                  ("proton_trace_graph_" + std::to_string(::getpid()) + ".chrome_trace");
  ChromeTraceWriter w(file.string(), TraceClock{0, 1, 0});
  auto kernel = [](ContextId ctx, uint64_t start, uint64_t end) {
    TraceEvent e;
    e.kind = TraceEvent::kKernel;
    e.context = ctx;
    e.name = id("k");
    e.start_ns = start;
    e.end_ns = end;
    e.stream = 7;
    return e;
  };
  std::vector<TraceEvent> batch{kernel(l1, 100, 200),    kernel(l1, 210, 300),
                                kernel(md, 305, 308),    kernel(l2, 310, 400),
                                kernel(other, 420, 430), kernel(again, 500, 600)};
  w.append(std::span(batch).first(3));  // lanes live across appends
  w.append(std::span(batch).subspan(3));
  w.finish(TraceSummary{});
  std::ifstream in(file);
  json trace = json::parse(in);
  fs::remove(file);
  const uint64_t lane = (uint64_t{1} << 31) + 7;
  std::vector<std::tuple<std::string, double, double>> slices;
  std::string lane_name;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == lane) {
      EXPECT_EQ(e["cat"], "scope");
      EXPECT_EQ(e["pid"], 0);
      slices.emplace_back(e["name"], e["ts"].get<double>(), e["dur"].get<double>());
    }
    if (e["ph"] == "M" && e["tid"] == lane && e["name"] == "thread_name") {
      lane_name = e["args"]["name"];
    }
  }
  using S = std::tuple<std::string, double, double>;
  std::vector<S> want{S{"layer1", 0.1, 0.2}, S{"layer2", 0.31, 0.09}, S{"layer1", 0.5, 0.1},
                      S{"capture", 0.1, 0.5}, S{"<captured_at>", 0.1, 0.5}};
  ASSERT_EQ(slices.size(), want.size()) << trace.dump(1);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::get<0>(slices[i]), std::get<0>(want[i])) << i;
    EXPECT_NEAR(std::get<1>(slices[i]), std::get<1>(want[i]), 1e-9) << i;
    EXPECT_NEAR(std::get<2>(slices[i]), std::get<2>(want[i]), 1e-9) << i;
  }
  EXPECT_EQ(lane_name, "Graph: stream 7");
}

TEST(TraceStoreUnit, ScopesPairPerThreadAndOpenOnesCloseAtTheEnd) {
  testing::MainThreadFixture main;
  std::vector<TraceEvent> spilled;
  TraceStore store(
      0, [&](auto events) { spilled.insert(spilled.end(), events.begin(), events.end()); });
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("a"));
  ContextId a = tc.scope_context();
  tc.enter_scope(id("b"));
  ContextId b = tc.scope_context();
  store.scope_exit(1, a, 5);  // exit of a scope entered before the trace: ignored
  store.scope_enter(1, a, 10);
  store.scope_enter(1, b, 20);
  store.scope_enter(2, a, 15);
  store.scope_exit(1, b, 30);
  store.close_open_scopes(100);
  tc.exit_scope(id("b"));
  tc.exit_scope(id("a"));
  std::vector<TraceEvent> kept;
  store.for_each_chunk([&](auto events) { kept.insert(kept.end(), events.begin(), events.end()); });
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].context, b);
  EXPECT_EQ(kept[0].start_ns, 20u);
  EXPECT_EQ(kept[0].end_ns, 30u);
  // Instance ids in entry order (the trace's scope_id): a 1, b 2, thread 2's a 3.
  EXPECT_EQ(kept[0].correlation, 2u);
  EXPECT_EQ(store.unfinished_scopes(), 2u);
  EXPECT_TRUE(spilled.empty());
}

}  // namespace
}  // namespace proton
