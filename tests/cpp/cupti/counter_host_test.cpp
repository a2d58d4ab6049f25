// The unknown-metric message (counter_host.h) without a GPU: it must name the bad metric and
// the chip, list the base metrics of the same unit, say when only the suffix is wrong, and stay
// short for a chip with hundreds of metrics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cupti/counter_host.h"

namespace proton::cupti {
namespace {

TEST(UnknownMetric, ListsTheSameUnitsMetrics) {
  std::vector<std::string> base = {"dram__bytes", "dram__bytes_read", "dram__bytes_write",
                                   "lts__t_sectors", "sm__throughput"};
  std::string m = unknown_metric_message("dram__bytes_red.sum", "GH100", base);
  EXPECT_NE(m.find("'dram__bytes_red.sum'"), std::string::npos) << m;
  EXPECT_NE(m.find("GH100"), std::string::npos) << m;
  EXPECT_NE(m.find("dram__bytes_read"), std::string::npos) << m;
  EXPECT_NE(m.find("dram__bytes_write"), std::string::npos) << m;
  EXPECT_EQ(m.find("sm__throughput"), std::string::npos) << m;  // another unit
  EXPECT_NE(m.find("5 base metrics"), std::string::npos) << m;
  EXPECT_NE(m.find("list_metrics"), std::string::npos) << m;
}

TEST(UnknownMetric, WrongSuffixOfAKnownBase) {
  std::vector<std::string> base = {"dram__bytes_read"};
  std::string m = unknown_metric_message("dram__bytes_read.pct", "GH100", base);
  EXPECT_NE(m.find("exists, but not with the suffix '.pct'"), std::string::npos) << m;
}

TEST(UnknownMetric, LongListsAreCut) {
  std::vector<std::string> base;
  for (int i = 0; i < 500; ++i)
    base.push_back("sm__metric_" + std::to_string(1000 + i));
  std::string m = unknown_metric_message("sm__nope.sum", "GH100", base);
  EXPECT_NE(m.find("(440 more)"), std::string::npos) << m;
  EXPECT_LT(m.size(), 2500u);
}

}  // namespace
}  // namespace proton::cupti
