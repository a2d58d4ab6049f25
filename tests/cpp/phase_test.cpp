// Phases of a session: kernels land in the phase of their launch however late their records
// arrive; completion, clearing, per-phase files and periodic flushing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::id;

class Phases : public testing::RuntimeFixture {
 protected:
  Phases() : RuntimeFixture("proton_phase_test_", 70000) {}
  /// Launches `kernel` now; its record waits in the fake backend until the next flush.
  void launch(const std::string& kernel) { RuntimeFixture::launch(kernel, 10); }
  static std::vector<std::string> kernels(const json& tree) {
    std::vector<std::string> out;
    for (const auto& c : tree[0]["children"])
      out.push_back(c["frame"]["name"]);
    return out;
  }
  json read_msgpack(const std::string& file) {
    std::ifstream in(dir_ / file, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    return json::from_msgpack(bytes);
  }
};

TEST_F(Phases, KernelsBelongToThePhaseOfTheirLaunch) {
  SessionId s = rt_.start(config("p"));
  launch("first");
  EXPECT_EQ(rt_.advance_phase(s), 1u);
  launch("second");
  // Neither record has arrived: phase 0 is over but not complete, phase 1 is still open.
  EXPECT_FALSE(rt_.is_phase_complete(s, 0));
  EXPECT_FALSE(rt_.is_phase_complete(s, 1));
  EXPECT_EQ(kernels(json::parse(rt_.hatchet_json(s, 0))), std::vector<std::string>{"first"});
  EXPECT_TRUE(rt_.is_phase_complete(s, 0));  // reading flushed the backend
  EXPECT_FALSE(rt_.is_phase_complete(s, 1));
  EXPECT_EQ(kernels(json::parse(rt_.hatchet_json(s, 1))), std::vector<std::string>{"second"});
  EXPECT_THROW(rt_.hatchet_json(s, 2), std::invalid_argument);
  rt_.finalize(s, "");
  EXPECT_FALSE(fs::exists(dir_ / "p.hatchet"));
  EXPECT_EQ(kernels(read_json("p.part_0.hatchet")), std::vector<std::string>{"first"});
  EXPECT_EQ(kernels(read_json("p.part_1.hatchet")), std::vector<std::string>{"second"});
}

TEST_F(Phases, CompletionWaitsForEveryKernelOfThePhase) {
  SessionId s = rt_.start(config("c"));
  launch("a");
  launch("b");
  rt_.advance_phase(s);
  // Deliver only the first record, as a backend buffer would.
  std::vector<KernelRecord> first(1);
  first[0].correlation = correlation_ - 1;
  first[0].name = id("a");
  first[0].end_ns = 5;
  rt_.processor().process(first);
  EXPECT_FALSE(rt_.is_phase_complete(s, 0));
  first[0].correlation = correlation_;
  first[0].name = id("b");
  rt_.processor().process(first);
  EXPECT_TRUE(rt_.is_phase_complete(s, 0));
}

TEST_F(Phases, ClearDropsPhasesAndLateKernels) {
  SessionId s = rt_.start(config("clr"));
  launch("zero");
  rt_.advance_phase(s);
  launch("one");
  rt_.advance_phase(s);
  launch("two");
  rt_.clear_phase(s, 0, false);
  EXPECT_TRUE(kernels(json::parse(rt_.hatchet_json(s, 0))).empty());  // late kernel dropped
  EXPECT_EQ(kernels(json::parse(rt_.hatchet_json(s, 1))), std::vector<std::string>{"one"});
  rt_.clear_phase(s, 1, /*clear_up_to_phase=*/true);
  EXPECT_TRUE(kernels(json::parse(rt_.hatchet_json(s, 1))).empty());
  rt_.clear_phase(s, 2, false);  // the current phase empties and keeps collecting
  launch("again");
  EXPECT_EQ(kernels(json::parse(rt_.hatchet_json(s, 2))), std::vector<std::string>{"again"});
  rt_.finalize(s, "");
  EXPECT_FALSE(fs::exists(dir_ / "clr.part_0.hatchet"));
  EXPECT_TRUE(fs::exists(dir_ / "clr.part_2.hatchet"));
}

TEST_F(Phases, ScopeMetricsGoToTheCurrentPhase) {
  SessionId s = rt_.start(config("m"));
  std::vector<std::pair<NameId, MetricValue>> m = {{id("bytes"), int64_t{8}}};
  rt_.add_metrics(m);
  rt_.advance_phase(s);
  rt_.add_metrics(m);
  rt_.add_metrics(m);
  EXPECT_EQ(json::parse(rt_.hatchet_json(s, 0))[0]["metrics"]["bytes"], 8);
  EXPECT_EQ(json::parse(rt_.hatchet_json(s, 1))[0]["metrics"]["bytes"], 16);
}

TEST_F(Phases, PeriodicFlushingWritesCompletedPhasesAtEachAdvance) {
  SessionId s = rt_.start(config("pf", "periodic_flushing:format=hatchet_msgpack"));
  launch("k0");
  rt_.advance_phase(s);  // phase 0's record has not arrived: nothing written yet
  EXPECT_FALSE(fs::exists(dir_ / "pf.part_0.hatchet_msgpack"));
  launch("k1");
  rt_.deactivate(s, /*flush=*/true);  // records of k0 and k1 arrive
  rt_.activate(s);
  rt_.advance_phase(s);  // phases 0 and 1 are complete: written and freed
  EXPECT_EQ(kernels(read_msgpack("pf.part_0.hatchet_msgpack")), std::vector<std::string>{"k0"});
  EXPECT_EQ(kernels(read_msgpack("pf.part_1.hatchet_msgpack")), std::vector<std::string>{"k1"});
  EXPECT_TRUE(kernels(json::parse(rt_.hatchet_json(s, 0))).empty());
  launch("k2");
  rt_.finalize(s, "");  // the rest, in the periodic format
  EXPECT_EQ(kernels(read_msgpack("pf.part_2.hatchet_msgpack")), std::vector<std::string>{"k2"});
  EXPECT_FALSE(fs::exists(dir_ / "pf.part_2.hatchet"));
}

// As triton.profiler: each completed phase's trace goes to name.part_<N>.chrome_trace.
TEST_F(Phases, PeriodicFlushingChromeTraceWritesEachPhasesTrace) {
  SessionConfig c = config("pt", "periodic_flushing:format=chrome_trace");
  c.data = "tree,trace";
  SessionId s = rt_.start(c);
  auto kernels_in = [&](const std::string& file) {
    std::vector<std::string> out;
    json trace = read_json(file);
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("ph", "") == "X" && e.value("cat", "") == "kernel") out.push_back(e["name"]);
    }
    return out;
  };
  launch("k0");
  rt_.advance_phase(s);  // phase 0's record has not arrived: nothing written yet
  EXPECT_FALSE(fs::exists(dir_ / "pt.part_0.chrome_trace"));
  launch("k1");
  rt_.deactivate(s, /*flush=*/true);  // records of k0 and k1 arrive
  rt_.activate(s);
  rt_.advance_phase(s);  // phases 0 and 1 are complete: their traces are written
  EXPECT_EQ(kernels_in("pt.part_0.chrome_trace"), std::vector<std::string>{"k0"});
  EXPECT_EQ(kernels_in("pt.part_1.chrome_trace"), std::vector<std::string>{"k1"});
  launch("k2");
  rt_.finalize(s, "");  // the current phase's trace, and the trees as usual
  EXPECT_EQ(kernels_in("pt.part_2.chrome_trace"), std::vector<std::string>{"k2"});
  EXPECT_FALSE(fs::exists(dir_ / "pt.chrome_trace"));
  EXPECT_EQ(kernels(read_json("pt.part_1.hatchet")), std::vector<std::string>{"k1"});
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".partial"), std::string::npos) << entry.path();
  }
}

TEST_F(Phases, PeriodicChromeTraceNeedsATraceAndTreeFormatsATree) {
  SessionConfig c = config("bad", "periodic_flushing:format=chrome_trace");
  EXPECT_THROW(rt_.start(c), std::invalid_argument);  // data="tree"
  c.data = "trace";
  SessionId s = rt_.start(c);
  launch("k");
  rt_.finalize(s, "");  // never advanced: one file, as a tree would be
  EXPECT_TRUE(fs::exists(dir_ / "bad.chrome_trace"));
  c.mode = "periodic_flushing";
  EXPECT_THROW(rt_.start(c), std::invalid_argument);  // data="trace" has no tree to flush
}

TEST_F(Phases, ASessionThatNeverAdvancedWritesOneFile) {
  SessionConfig c = config("one", "periodic_flushing");
  c.name += ".hatchet";  // a known extension on the name is replaced, not doubled
  SessionId s = rt_.start(c);
  launch("k");
  rt_.finalize(s, "");
  EXPECT_TRUE(fs::exists(dir_ / "one.hatchet"));
}

}  // namespace
}  // namespace proton
