// The rank block (io/run_info.h): on the root frame of Hatchet JSON and msgpack when this
// process is one rank of a job, absent otherwise.
#include "io/run_info.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/hatchet_writer.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;

class RunInfoTest : public ::testing::Test {
 protected:
  void TearDown() override { set_run_info(RunInfo{}); }  // leave no rank for other tests
};

TEST_F(RunInfoTest, SingleProcessFilesAreUnchanged) {
  CallTree t;
  json j = json::parse(hatchet_json(t, {}, {}));
  EXPECT_EQ(j[0]["frame"], (json{{"name", "ROOT"}, {"type", "function"}}));
}

TEST_F(RunInfoTest, RankBlockOnTheRootFrame) {
  set_run_info(RunInfo{3, 8, 1, "node7", "1", "torchrun"});
  CallTree t;
  t.child(CallTree::kRoot, testing::id("step"));
  json j = json::parse(hatchet_json(t, {}, {}));
  const json& frame = j[0]["frame"];
  EXPECT_EQ(frame["name"], "ROOT");
  EXPECT_EQ(frame["type"], "function");
  EXPECT_EQ(frame["rank"], 3);
  EXPECT_EQ(frame["world_size"], 8);
  EXPECT_EQ(frame["local_rank"], 1);
  EXPECT_EQ(frame["host"], "node7");
  EXPECT_EQ(frame["device"], "1");
  EXPECT_EQ(frame["launcher"], "torchrun");
  EXPECT_EQ(frame["proton_version"], proton_version());
  // Only the root carries it.
  EXPECT_EQ(j[0]["children"][0]["frame"], (json{{"name", "step"}, {"type", "function"}}));
  std::string packed = hatchet_msgpack(t, {}, {});
  json from_msgpack = json::from_msgpack(std::vector<uint8_t>(packed.begin(), packed.end()));
  EXPECT_EQ(from_msgpack, j);
}

}  // namespace
}  // namespace proton
