// Hardware counters without a GPU: the mode grammar, the sum / time-weighted rules on the call
// tree, the join of per-launch values with kernel records (either order, graph fan-out, bounds),
// PM-sample averages and counter tracks, and the whole path through the Runtime with synthetic
// counter batches delivered as the CUPTI backend delivers them.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/counter_config.h"
#include "data/counter_join.h"
#include "data/counter_rules.h"
#include "data/counter_track.h"
#include "io/counter_track_writer.h"
#include "runtime_fixture.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

TEST(CounterConfig, DefaultSetAndOptions) {
  CounterConfig c = parse_counter_config("counters");
  EXPECT_TRUE(c.enabled);
  EXPECT_FALSE(c.user_metrics);
  EXPECT_EQ(c.range, CounterRange::kUser);
  EXPECT_FALSE(c.replay);
  EXPECT_TRUE(c.range_profiler);
  EXPECT_FALSE(c.pm_sampling);
  ASSERT_EQ(c.metrics.size(), default_counter_metrics().size());
  EXPECT_EQ(c.metrics[0][0], "dram__bytes_read.sum");
  EXPECT_EQ(c.metrics[1][0], "dram__bytes_write.sum");
  EXPECT_EQ(c.metrics.back()[0], "lts__t_sectors.sum");

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
  CounterConfig again = parse_counter_config(c.canonical());
  EXPECT_EQ(again.canonical(), c.canonical());

  // A trace-only session samples device-wide by default.
  c = parse_counter_config("counters", /*trace_only=*/true);
  EXPECT_FALSE(c.range_profiler);
  EXPECT_TRUE(c.pm_sampling);
  EXPECT_FALSE(parse_counter_config("graph").enabled);
  EXPECT_FALSE(is_counters_mode("countersx"));
  EXPECT_TRUE(is_counters_mode("counters:range=auto"));
}

TEST(CounterConfig, BadOptionsSayWhatIsAccepted) {
  for (const char* bad : {"counters:metrics=", "counters:metrics=a b", "counters:range=both",
                          "counters:interval_us=0", "counters:interval_us=x",
                          "counters:sampling=never", "counters:bogus", "counters:replay=1"}) {
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

TEST(CounterTrack, OverlapWeightedKernelAverages) {
  CounterSchema schema({"a.pct", "b.pct"});
  CounterTrack track;
  // Samples of 100 ns from 0 to 600: a = 10, 20, ..., 60; b constant 5.
  track.add(samples(schema, {0, 100, 200, 300, 400, 500}, 100,
                    {10, 5, 20, 5, 30, 5, 40, 5, 50, 5, 60, 5}));
  std::vector<double> avg;
  // [150, 450): half of 20, all of 30 and 40, half of 50 -> (10 + 30 + 40 + 25) / 3 = 35.
  ASSERT_TRUE(track.average(0, 150, 450, 3, avg));
  EXPECT_NEAR(avg[0], 35.0, 1e-9);
  EXPECT_NEAR(avg[1], 5.0, 1e-9);
  // Too few samples under a short kernel: no average.
  EXPECT_FALSE(track.average(0, 150, 260, 3, avg));
  // Another device has no samples.
  EXPECT_FALSE(track.average(1, 0, 600, 1, avg));
  // Bounded: the oldest go.
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
    rt_.processor().deliver_counters(batch);
  }
  static double metric(const json& node, const std::string& name) {
    return node["metrics"][name].get<double>();
  }
};

TEST_F(Counters, ValuesLandOnKernelNodesInEitherOrder) {
  CounterSchema schema(
      {"dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"});
  SessionId s = rt_.start(config("c", "counters"));
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
  SessionId s = rt_.start(config("lost", "counters"));
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

TEST_F(Counters, PmSamplesBecomeCounterTracksAndKernelAverages) {
  SessionConfig c = config("pm", "counters:sampling=pm");
  c.data = "tree,trace";
  SessionId s = rt_.start(c);
  KernelRecord r;
  LaunchStage::tag(++correlation_);
  r.correlation = correlation_;
  r.name = id("long_kernel");
  r.start_ns = 10000;
  r.end_ns = 10000 + 1000000;  // 1 ms: ten 100 us samples
  fake_->complete(r);
  CounterSchema schema({"dram__throughput.avg.pct_of_peak_sustained_elapsed"});
  CounterSamples batch;
  batch.schema = &schema;
  for (int i = 0; i < 12; ++i) {
    batch.start_ns.push_back(10000 + uint64_t(i) * 100000);
    batch.end_ns.push_back(10000 + uint64_t(i + 1) * 100000);
    batch.values.push_back(i < 10 ? 60.0 : 0.0);
  }
  rt_.processor().deliver_counter_samples(batch);
  rt_.finalize(s, "");
  json root = read("pm")[0];
  const json* k = child(root, "long_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_NEAR(
      k->at("metrics")["pm:dram__throughput.avg.pct_of_peak_sustained_elapsed (ns-weighted)"]
              .get<double>() /
          k->at("metrics")["pm:counter time (ns)"].get<double>(),
      60.0, 1e-6);
  json trace = read_json("pm.chrome_trace");
  size_t counters = 0;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    }
  }
  EXPECT_EQ(counters, 12u);
}

}  // namespace
}  // namespace proton
