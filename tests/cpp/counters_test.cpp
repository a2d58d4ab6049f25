// Hardware counters without a GPU: the mode grammar, the sum / time-weighted rules on the call
// tree, the join of per-launch values with kernel records (either order, graph fan-out, bounds),
// PM-sample averages and counter tracks, and the whole path through the Runtime with synthetic
// counter batches delivered as the CUPTI backend delivers them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/counter_config.h"
#include "data/counter_join.h"
#include "data/counter_rules.h"
#include "data/counter_track.h"
#include "io/counter_track_writer.h"
#include "io/run_info.h"
#include "options/mode.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

// The mode grammar's counters options (options/mode.h); disabled for another mode.
CounterConfig parse_counter_config(const std::string& mode) {
  Mode m = parse_mode(mode);
  const auto* c = std::get_if<CounterConfig>(&m);
  return c != nullptr ? *c : CounterConfig{};
}

TEST(CounterConfig, DefaultSetAndOptions) {
  // The default: PM sampling, its one-pass set, per-kernel values by split.
  CounterConfig c = parse_counter_config("counters");
  EXPECT_TRUE(c.enabled);
  EXPECT_FALSE(c.user_metrics);
  EXPECT_FALSE(c.replay);
  EXPECT_FALSE(c.range_profiler);
  EXPECT_TRUE(c.pm_sampling);
  EXPECT_EQ(c.interval_us, CounterConfig::kDefaultIntervalUs);
  ASSERT_EQ(c.metrics.size(), default_sampling_metrics().size());
  EXPECT_EQ(c.metrics[0][0], "dram__bytes_read.sum");
  EXPECT_EQ(c.metrics[1][0], "dram__bytes_write.sum");
  EXPECT_EQ(c.metrics[5][0], "lts__t_sectors.sum");
  EXPECT_EQ(c.canonical(), "counters:sampling=pm:interval_us=" +
                               std::to_string(CounterConfig::kDefaultIntervalUs));

  // The Range Profiler on request, with its own default set.
  c = parse_counter_config("counters:range=user");
  EXPECT_TRUE(c.range_profiler);
  EXPECT_FALSE(c.pm_sampling);
  EXPECT_EQ(c.range, CounterRange::kUser);
  ASSERT_EQ(c.metrics.size(), default_counter_metrics().size());
  EXPECT_EQ(c.metrics.back()[0], "lts__t_sectors.sum");
  EXPECT_EQ(parse_counter_config("counters:sampling=range").canonical(), c.canonical());
  c = parse_counter_config("counters:replay");
  EXPECT_TRUE(c.range_profiler && c.replay && !c.pm_sampling);

  c = parse_counter_config(
      "Counters:metrics=a__b.sum,c__d.avg.pct_of_peak_sustained_elapsed:"
      "range=auto:replay:interval_us=50:sampling=both");
  EXPECT_TRUE(c.user_metrics);
  ASSERT_EQ(c.metrics.size(), 2u);
  EXPECT_EQ(c.metrics[1][0], "c__d.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(c.range, CounterRange::kAuto);
  EXPECT_TRUE(c.replay);
  EXPECT_EQ(c.interval_us, 50u);
  EXPECT_TRUE(c.range_profiler && c.pm_sampling);
  // The canonical form parses back to the same config.
  for (const char* mode : {"counters", "counters:range=auto", "counters:sampling=both",
                           "counters:metrics=x.sum:interval_us=7"}) {
    CounterConfig once = parse_counter_config(mode);
    EXPECT_EQ(parse_counter_config(once.canonical()).canonical(), once.canonical()) << mode;
  }
  EXPECT_EQ(parse_counter_config(c.canonical()).canonical(), c.canonical());

  EXPECT_FALSE(parse_counter_config("graph").enabled);
  EXPECT_THROW(parse_counter_config("countersx"), std::invalid_argument);
  EXPECT_TRUE(parse_counter_config("counters:range=auto").enabled);
}

TEST(CounterConfig, BadOptionsSayWhatIsAccepted) {
  for (const char* bad : {"counters:metrics=", "counters:metrics=a b", "counters:range=both",
                          "counters:interval_us=0", "counters:interval_us=x",
                          "counters:sampling=never", "counters:bogus", "counters:replay=1",
                          "counters:sampling=pm:range=user", "counters:replay:sampling=pm"}) {
    try {
      parse_counter_config(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("counters"), std::string::npos) << e.what();
    }
  }
  try {
    parse_counter_config("counters:bogus");
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("metrics="), std::string::npos) << e.what();
  }
}

TEST(CounterRules, SumsAndTimeWeightedAverages) {
  EXPECT_EQ(counter_rule("dram__bytes_read.sum"), CounterRule::kSum);
  EXPECT_EQ(counter_rule("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            CounterRule::kTimeWeighted);
  EXPECT_EQ(counter_rule("lts__t_sector_hit_rate.pct"), CounterRule::kTimeWeighted);
  EXPECT_EQ(counter_rule("dram__bytes_read.sum.per_second"), CounterRule::kTimeWeighted);
  EXPECT_EQ(counter_time_metric_for("pm:a.pct (ns-weighted)"), kPmCounterTimeMetric);
  EXPECT_EQ(counter_time_metric_for("a.pct (ns-weighted)"), kCounterTimeMetric);

  CounterSchema schema(
      {"dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  CallTree tree;
  CallTree::NodeId scope = tree.child(CallTree::kRoot, id("scope"));
  CallTree::NodeId gemm = tree.child(scope, id("gemm"));
  CallTree::NodeId tiny = tree.child(scope, id("tiny"));
  CallTree::NodeId other = tree.child(CallTree::kRoot, id("other"));
  // gemm: two launches of 1000 ns at 90% and 70%, 100 + 300 bytes.
  EXPECT_EQ(attach_counters(tree, gemm, 1000, schema, std::vector<double>{100, 90}), 0u);
  EXPECT_EQ(attach_counters(tree, gemm, 1000, schema, std::vector<double>{300, 70}), 0u);
  // tiny: 10 ns at 10%; its bytes were not measured (NaN).
  attach_counters(tree, tiny, 10, schema, std::vector<double>{std::nan(""), 10});
  auto r = rollup_counters(tree, schema);
  EXPECT_DOUBLE_EQ(r[gemm][0], 400);
  EXPECT_DOUBLE_EQ(r[gemm][1], 80);  // (90*1000 + 70*1000) / 2000
  EXPECT_TRUE(std::isnan(r[tiny][0]));
  EXPECT_DOUBLE_EQ(r[tiny][1], 10);
  EXPECT_DOUBLE_EQ(r[scope][0], 400);
  EXPECT_NEAR(r[scope][1], (160000.0 + 100.0) / 2010.0, 1e-9);  // not the plain mean (50)
  EXPECT_DOUBLE_EQ(r[CallTree::kRoot][0], 400);
  EXPECT_TRUE(std::isnan(r[other][0]));
  EXPECT_TRUE(std::isnan(r[other][1]));

  // The tree stores the summable numerator and the counter time (what Hatchet readers sum).
  const auto& m = tree.node(gemm).metrics;
  auto find = [&](std::string_view name) -> const MetricValue* {
    for (const auto& [k, v] : m) {
      if (NameTable::global().name(k) == name) return &v;
    }
    return nullptr;
  };
  ASSERT_NE(find("sm__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)"), nullptr);
  EXPECT_DOUBLE_EQ(
      std::get<double>(*find("sm__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)")),
      160000);
  ASSERT_NE(find("counter time (ns)"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*find("counter time (ns)")), 2000);
}

TEST(CounterRules, TypeClashIsCountedNotThrown) {
  CounterSchema schema({"x__clash.sum"});
  CallTree tree;
  CallTree::NodeId n = tree.child(CallTree::kRoot, id("k"));
  tree.add_metric(n, id("x__clash.sum"), MetricValue{int64_t{1}});
  EXPECT_EQ(attach_counters(tree, n, 5, schema, std::vector<double>{2.0}), 1u);
}

TEST(CounterJoin, EitherOrderAndGraphFanOut) {
  CounterJoin join;
  std::vector<double> values;
  CounterJoin::Target target;
  // Kernel first.
  EXPECT_FALSE(join.kernel(1, {0, 7, 100}, values));
  EXPECT_TRUE(join.values(1, std::vector<double>{1, 2}, target));
  EXPECT_EQ(target.node, 7u);
  EXPECT_EQ(target.duration_ns, 100u);
  // Values first.
  EXPECT_FALSE(join.values(2, std::vector<double>{3, 4}, target));
  EXPECT_TRUE(join.kernel(2, {0, 8, 50}, values));
  EXPECT_EQ(values, (std::vector<double>{3, 4}));
  // A graph launch: three kernel records under one correlation, one set of values.
  EXPECT_FALSE(join.kernel(3, {1, 9, 10}, values));
  EXPECT_FALSE(join.kernel(3, {1, 10, 20}, values));
  EXPECT_FALSE(join.kernel(3, {1, 11, 30}, values));
  EXPECT_TRUE(join.values(3, std::vector<double>{5}, target));
  EXPECT_EQ(target.node, 9u);  // the first kernel's node
  EXPECT_EQ(target.duration_ns, 60u);
  EXPECT_EQ(join.stats().joined, 3u);
  EXPECT_EQ(join.waiting(), 0u);
  // Settle forgets kernels whose values never came, keeps values (their kernels may be late).
  join.kernel(4, {0, 1, 1}, values);
  join.values(5, std::vector<double>{1}, target);
  join.settle();
  EXPECT_EQ(join.stats().dropped_kernels, 1u);
  EXPECT_EQ(join.waiting(), 1u);
}

TEST(CounterJoin, BoundedOnBothSides) {
  CounterJoin join(4);
  std::vector<double> values;
  CounterJoin::Target target;
  for (uint64_t c = 1; c <= 10; ++c)
    join.kernel(c, {0, 1, 1}, values);
  for (uint64_t c = 100; c <= 110; ++c)
    join.values(c, std::vector<double>{1}, target);
  EXPECT_EQ(join.waiting(), 8u);
  EXPECT_EQ(join.stats().dropped_kernels, 6u);
  EXPECT_EQ(join.stats().dropped_values, 7u);
  // The newest survive.
  EXPECT_TRUE(join.values(10, std::vector<double>{1}, target));
  EXPECT_TRUE(join.kernel(110, {0, 1, 1}, values));
}

CounterSamples samples(const CounterSchema& schema, std::vector<uint64_t> starts, uint64_t period,
                       std::vector<double> values, uint32_t device = 0) {
  CounterSamples s;
  s.schema = &schema;
  s.device = device;
  for (uint64_t t : starts) {
    s.start_ns.push_back(t);
    s.end_ns.push_back(t + period);
  }
  s.values = std::move(values);
  return s;
}

TEST(CounterTrack, BoundedKeepsTheNewest) {
  CounterSchema schema({"a.pct", "b.pct"});
  CounterTrack small(2);
  small.add(samples(schema, {0, 100, 200}, 100, {1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(small.samples().size(), 2u);
  EXPECT_EQ(small.dropped(), 1u);
  EXPECT_EQ(small.samples().front().start_ns, 100u);
}

TEST(CounterTrack, ChromeCounterEvents) {
  CounterSchema schema({"dram.pct"});
  CounterTrack track;
  // Two samples, a gap, one more: the gap closes the track at 0.
  track.add(samples(schema, {1000000, 1100000, 5000000}, 100000, {10, 20, 30}, 2));
  std::vector<std::string> events = counter_track_events(track, /*gpu_offset_ns=*/0, 1000000);
  ASSERT_EQ(events.size(), 4u);
  std::vector<json> parsed;
  for (const std::string& e : events)
    parsed.push_back(json::parse(e));
  for (const json& e : parsed) {
    EXPECT_EQ(e["ph"], "C");
    EXPECT_EQ(e["pid"], 2);
    EXPECT_EQ(e["name"], "dram.pct");
  }
  EXPECT_DOUBLE_EQ(parsed[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(parsed[0]["args"]["value"].get<double>(), 10);
  EXPECT_DOUBLE_EQ(parsed[1]["ts"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(parsed[2]["ts"].get<double>(), 200.0);  // the gap: back to 0
  EXPECT_DOUBLE_EQ(parsed[2]["args"]["value"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(parsed[3]["ts"].get<double>(), 4000.0);

  // A ".sum" metric is drawn as its rate: bytes per second of the sample.
  CounterSchema bytes({"dram__bytes_read.sum"});
  CounterTrack rate;
  rate.add(samples(bytes, {0}, 100000, {5000}));
  json e = json::parse(counter_track_events(rate, 0, 0).at(0));
  EXPECT_EQ(e["name"], "dram__bytes_read.sum.per_second");
  EXPECT_DOUBLE_EQ(e["args"]["value"].get<double>(), 5000 / 100e-6);

  // Non-finite samples as every metric is written (not a made-up 0): NaN null, +-inf +-1e999.
  CounterTrack odd;
  odd.add(samples(schema, {0, 100000, 200000}, 100000,
                  {std::nan(""), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}));
  std::vector<std::string> odd_events = counter_track_events(odd, 0, 0);
  ASSERT_EQ(odd_events.size(), 3u);
  EXPECT_NE(odd_events[0].find(R"("args":{"value":null})"), std::string::npos) << odd_events[0];
  EXPECT_NE(odd_events[1].find(R"("args":{"value":1e999})"), std::string::npos) << odd_events[1];
  EXPECT_NE(odd_events[2].find(R"("args":{"value":-1e999})"), std::string::npos) << odd_events[2];
}

class Counters : public testing::RuntimeFixture {
 protected:
  Counters() : RuntimeFixture("proton_counters_test_", 700000) {}
  void deliver(const CounterSchema& schema, std::vector<uint64_t> correlations,
               std::vector<double> values) {
    LaunchCounters batch;
    batch.schema = &schema;
    batch.correlation = std::move(correlations);
    batch.values = std::move(values);
    rt_.processor().deliver(LaunchCounterValues{batch});
  }
  static double metric(const json& node, const std::string& name) {
    return node["metrics"][name].get<double>();
  }
};

// PM sampling picks its device from the rank's local rank when no context is current yet: the
// one proton/_ranks.py detected (mpirun and srun set no LOCAL_RANK), handed to the backend.
TEST_F(Counters, TheBackendIsGivenTheRanksLocalRank) {
  set_run_info(RunInfo{5, 8, 3, "node2", "", "mpi"});
  SessionId s = rt_.start(config("ranked", "counters"));
  EXPECT_EQ(log_.local_rank, 3);
  rt_.finalize(s, "");
  set_run_info(RunInfo{});
  s = rt_.start(config("alone", "counters"));
  EXPECT_EQ(log_.local_rank, -1);
  rt_.finalize(s, "");
}

TEST_F(Counters, ValuesLandOnKernelNodesInEitherOrder) {
  CounterSchema schema(
      {"dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  SessionId s = rt_.start(config("c", "counters:range=user"));
  SessionId plain = rt_.start(config("plain"));
  auto& tc = ThreadContext::current();
  tc.enter_scope(id("model"));
  launch("gemm", 1000);  // its record waits in the fake backend until the flush
  uint64_t first = correlation_;
  // The next two records reach the sessions now, before their values.
  std::vector<KernelRecord> early;
  for (uint64_t ns : {3000, 500}) {
    LaunchStage::tag(++correlation_);
    KernelRecord r;
    r.correlation = correlation_;
    r.name = id(ns == 3000 ? "gemm" : "copy");
    r.start_ns = 1000;
    r.end_ns = 1000 + ns;
    early.push_back(r);
    if (ns == 3000) tc.exit_scope(id("model"));
  }
  uint64_t second = correlation_ - 1, third = correlation_;
  rt_.processor().process(early);
  // Values: the first launch's before its kernel record, the others after theirs.
  deliver(schema, {first, second, third}, {100, 90, 300, 50, 1000, 10});
  rt_.finalize(s, "");
  rt_.finalize(plain, "");
  json root = read("c")[0];
  const json* gemm = child(*child(root, "model"), "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_DOUBLE_EQ(metric(*gemm, "dram__bytes_read.sum"), 400);
  EXPECT_DOUBLE_EQ(metric(*gemm, "sm__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)"),
                   90.0 * 1000 + 50.0 * 3000);
  EXPECT_EQ((*gemm)["metrics"]["counter time (ns)"], 4000);
  const json* copy = child(root, "copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_DOUBLE_EQ(metric(*copy, "dram__bytes_read.sum"), 1000);
  // A session without counters never sees them.
  json proot = read("plain")[0];
  EXPECT_FALSE(
      (*child(*child(proot, "model"), "gemm"))["metrics"].contains("dram__bytes_read.sum"));
}

TEST_F(Counters, KernelsWhoseValuesNeverComeAreForgottenAtFlush) {
  CounterSchema schema({"dram__bytes_read.sum"});
  SessionId s = rt_.start(config("lost", "counters:range=user"));
  launch("k", 10);
  uint64_t c = correlation_;
  rt_.deactivate(s, /*flush=*/true);  // the kernel arrives, no values: dropped from the join
  deliver(schema, {c}, {5});          // too late: waits, never attached
  rt_.finalize(s, "");
  json root = read("lost")[0];
  const json* k = child(root, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE((*k)["metrics"].contains("dram__bytes_read.sum"));
}

TEST_F(Counters, BadModeIsRefusedBeforeAnythingStarts) {
  EXPECT_THROW(rt_.start(config("bad", "counters:range=sideways")), std::invalid_argument);
  EXPECT_FALSE(rt_.has_sessions());
}

TEST_F(Counters, ASecondCountersSetupIsRefusedWhileTheFirstRuns) {
  SessionId s = rt_.start(config("a", "counters"));
  try {
    rt_.start(config("b", "counters:metrics=x__y.sum"));
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  // The same setup joins.
  SessionId t = rt_.start(config("c", "counters"));
  rt_.finalize(t, "");
  rt_.finalize(s, "");
}

TEST_F(Counters, PmSamplesAreSplitOverKernelsAndDrawnAsTracks) {
  SessionConfig c = config("pm", "counters");
  c.data = "tree,trace";
  SessionId s = rt_.start(c);
  auto& tc = ThreadContext::current();
  auto kernel = [&](const char* name, uint64_t start, uint64_t end) {
    KernelRecord r;
    LaunchStage::tag(++correlation_);
    r.correlation = correlation_;
    r.name = id(name);
    r.start_ns = start;
    r.end_ns = end;
    fake_->complete(r);
  };
  // A 1 ms copy over ten 100 us samples; two short kernels inside one sample after it.
  tc.enter_scope(id("copy_loop"));
  kernel("copy", 10000, 1010000);
  tc.exit_scope(id("copy_loop"));
  kernel("tiny", 1020000, 1030000);
  kernel("other", 1050000, 1090000);
  CounterSchema schema(
      {"dram__bytes_read.sum", "sm__warps_active.avg.pct_of_peak_sustained_active"});
  CounterSamples batch;
  batch.schema = &schema;
  for (int i = 0; i < 12; ++i) {
    batch.start_ns.push_back(10000 + uint64_t(i) * 100000);
    batch.end_ns.push_back(10000 + uint64_t(i + 1) * 100000);
    batch.values.push_back(i < 10 ? 1e6 : (i == 10 ? 500 : 0));  // bytes
    batch.values.push_back(i < 10 ? 60.0 : 20.0);
  }
  rt_.processor().deliver(CounterSampleBatch{batch});
  rt_.finalize(s, "");
  json root = read("pm")[0];
  const json* copy = child(*child(root, "copy_loop"), "copy");
  ASSERT_NE(copy, nullptr);
  const json& m = (*copy)["metrics"];
  EXPECT_NEAR(m["dram__bytes_read.sum"].get<double>(), 1e7, 1e-3);
  EXPECT_NEAR(m["sm__warps_active.avg.pct_of_peak_sustained_active (ns-weighted)"].get<double>() /
                  m["counter time (ns)"].get<double>(),
              60.0, 1e-9);
  EXPECT_DOUBLE_EQ(m["counter samples"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(m["counter samples shared"].get<double>(), 0.0);
  // Sample 10 ([1010000, 1110000), 500 bytes) holds tiny (10 us) and other (40 us).
  const json* tiny = child(root, "tiny");
  const json* other = child(root, "other");
  ASSERT_NE(tiny, nullptr);
  ASSERT_NE(other, nullptr);
  EXPECT_NEAR((*tiny)["metrics"]["dram__bytes_read.sum"].get<double>(), 100, 1e-9);
  EXPECT_NEAR((*other)["metrics"]["dram__bytes_read.sum"].get<double>(), 400, 1e-9);
  EXPECT_NEAR((*tiny)["metrics"]["counter samples shared"].get<double>(), 0.2, 1e-9);
  // The sample after them had no kernel: counted on the root.
  EXPECT_EQ(root["metrics"]["counter samples idle"], 1);
  // The trace draws every sample (the bytes as a rate).
  json trace = read_json("pm.chrome_trace");
  size_t events = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "C") continue;
    ++events;
    EXPECT_TRUE(e["name"] == "dram__bytes_read.sum.per_second" ||
                e["name"] == "sm__warps_active.avg.pct_of_peak_sustained_active")
        << e;
  }
  EXPECT_EQ(events, 24u);
}

TEST_F(Counters, BothSourcesKeepTheirOwnNames) {
  SessionId s = rt_.start(config("both", "counters:sampling=both"));
  launch("k", 1000);
  uint64_t c = correlation_;
  CounterSchema rp({"dram__bytes_read.sum"});
  deliver(rp, {c}, {123});
  CounterSchema pm({"dram__bytes_read.sum"});
  CounterSamples batch;
  batch.schema = &pm;
  batch.start_ns = {500};
  batch.end_ns = {2500};
  batch.values = {77};
  rt_.processor().deliver(CounterSampleBatch{batch});
  rt_.finalize(s, "");
  json root = read("both")[0];
  const json* k = child(root, "k");
  ASSERT_NE(k, nullptr);
  EXPECT_DOUBLE_EQ((*k)["metrics"]["dram__bytes_read.sum"].get<double>(), 123);
  EXPECT_DOUBLE_EQ((*k)["metrics"]["pm:dram__bytes_read.sum"].get<double>(), 77);
  EXPECT_DOUBLE_EQ((*k)["metrics"]["pm:counter samples"].get<double>(), 1.0);
}

}  // namespace
}  // namespace proton
