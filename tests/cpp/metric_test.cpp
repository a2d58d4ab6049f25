#include "data/metric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace proton {
namespace {

TEST(Metric, RuleComesFromName) {
  EXPECT_EQ(metric_rule("bytes"), MetricRule::kSum);
  EXPECT_EQ(metric_rule("peak (exc)"), MetricRule::kExclusive);
  EXPECT_EQ(metric_rule("peak(exc)"), MetricRule::kExclusive);
  EXPECT_EQ(metric_rule("version (pty)"), MetricRule::kProperty);
  EXPECT_EQ(metric_rule("exc"), MetricRule::kSum);
}

TEST(Metric, FlopsBecomeFloatsAndBytesInts) {
  EXPECT_EQ(metric_type(coerce_metric("flops16", int64_t{3})), MetricType::kFloat);
  EXPECT_EQ(std::get<double>(coerce_metric("flops", int64_t{3})), 3.0);
  EXPECT_EQ(std::get<int64_t>(coerce_metric("bytes", 7.9)), 7);
  EXPECT_EQ(metric_type(coerce_metric("flops8", std::vector<int64_t>{1, 2})),
            MetricType::kFloatVector);
  EXPECT_EQ(metric_type(coerce_metric("bytes", std::vector<double>{1.5})), MetricType::kIntVector);
  EXPECT_EQ(metric_type(coerce_metric("other", int64_t{1})), MetricType::kInt);
}

TEST(Metric, SumAddsScalarsAndVectors) {
  MetricValue v = int64_t{2};
  combine_metric(MetricRule::kSum, v, int64_t{5});
  EXPECT_EQ(std::get<int64_t>(v), 7);

  MetricValue vec = std::vector<double>{1.0, 2.0};
  combine_metric(MetricRule::kSum, vec, std::vector<double>{0.5, 0.5, 4.0});
  EXPECT_EQ(std::get<std::vector<double>>(vec), (std::vector<double>{1.5, 2.5, 4.0}));
}

TEST(Metric, ExclusiveMetricsStillSumOnTheirNode) {
  MetricValue v = 1.5;
  combine_metric(MetricRule::kExclusive, v, 2.0);
  EXPECT_DOUBLE_EQ(std::get<double>(v), 3.5);
}

TEST(Metric, PropertyOverwrites) {
  MetricValue v = int64_t{2};
  combine_metric(MetricRule::kProperty, v, int64_t{9});
  EXPECT_EQ(std::get<int64_t>(v), 9);
}

TEST(Metric, OutputNameDropsTheRuleSuffixAsTritonWritesIt) {
  EXPECT_EQ(metric_output_name("peak (exc)"), "peak");
  EXPECT_EQ(metric_output_name("peak(exc)"), "peak");
  EXPECT_EQ(metric_output_name("version  (pty)"), "version");
  EXPECT_EQ(metric_output_name("bytes"), "bytes");
  EXPECT_EQ(metric_output_name("(exc)"), "");
  EXPECT_EQ(metric_output_name("exc)"), "exc)");
}

TEST(Metric, StringsReplaceWhateverTheRule) {
  MetricValue v = std::string("bf16");
  EXPECT_EQ(metric_type(v), MetricType::kString);
  EXPECT_STREQ(metric_type_name(MetricType::kString), "str");
  combine_metric(MetricRule::kSum, v, std::string("fp8"));
  EXPECT_EQ(std::get<std::string>(v), "fp8");
  combine_metric(MetricRule::kExclusive, v, std::string("tf32"));
  EXPECT_EQ(std::get<std::string>(v), "tf32");
}

// Int sums at the 64-bit edge wrap (defined behaviour, checked by UBSan in the test build);
// float sums keep NaN and infinities.
TEST(Metric, SumsAtTheEdgesAreDefined) {
  MetricValue v = std::numeric_limits<int64_t>::max();
  combine_metric(MetricRule::kSum, v, MetricValue(int64_t{1}));
  EXPECT_EQ(std::get<int64_t>(v), std::numeric_limits<int64_t>::min());
  MetricValue vec = std::vector<int64_t>{std::numeric_limits<int64_t>::min()};
  combine_metric(MetricRule::kSum, vec, MetricValue(std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(std::get<std::vector<int64_t>>(vec),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 2}));
  MetricValue f = std::numeric_limits<double>::infinity();
  combine_metric(MetricRule::kSum, f, MetricValue(1.0));
  EXPECT_EQ(std::get<double>(f), std::numeric_limits<double>::infinity());
  combine_metric(MetricRule::kSum, f, MetricValue(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_TRUE(std::isnan(std::get<double>(f)));
}

}  // namespace
}  // namespace proton
