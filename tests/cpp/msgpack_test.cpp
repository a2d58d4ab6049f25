// The MessagePack encoding of a tree decodes to exactly the JSON tree, with every value type.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "format/msgpack_writer.h"
#include "io/hatchet_writer.h"
#include "test_util.h"

namespace proton {
namespace {

using json = nlohmann::json;
using testing::id;

json decode(const std::string& bytes) {
  return json::from_msgpack(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

TEST(Msgpack, ScalarsUseTheirValuesAndContainersAreCounted) {
  std::string out;
  MsgpackWriter w(out);
  w.begin_object();
  w.key("small").value(int64_t{5});
  w.key("neg").value(int64_t{-3});
  w.key("neg8").value(int64_t{-100});
  w.key("neg16").value(int64_t{-30000});
  w.key("neg32").value(int64_t{-3000000000LL});
  w.key("min").value(std::numeric_limits<int64_t>::min());
  w.key("u8").value(uint64_t{200});
  w.key("u16").value(uint64_t{60000});
  w.key("u32").value(uint64_t{4000000000u});
  w.key("u64").value(std::numeric_limits<uint64_t>::max());
  w.key("f").value(1.25);
  w.key("nan").value(std::numeric_limits<double>::quiet_NaN());
  w.key("inf").value(std::numeric_limits<double>::infinity());
  w.key("ninf").value(-std::numeric_limits<double>::infinity());
  w.key("t").value(true);
  w.key("s31").value(std::string(31, 'a'));
  w.key("s255").value(std::string(255, 'b'));
  w.key("s70k").value(std::string(70000, 'c'));
  w.key("utf8").value("héllo ✓");
  w.key("arr").begin_array().value(int64_t{1}).begin_object().end_object().begin_array();
  w.end_array().end_array();
  w.key("empty").begin_object().end_object();
  w.end_object();
  json j = decode(out);
  EXPECT_EQ(j["small"], 5);
  EXPECT_EQ(j["neg"], -3);
  EXPECT_EQ(j["neg8"], -100);
  EXPECT_EQ(j["neg16"], -30000);
  EXPECT_EQ(j["neg32"], -3000000000LL);
  EXPECT_EQ(j["min"], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(j["u8"], 200);
  EXPECT_EQ(j["u16"], 60000);
  EXPECT_EQ(j["u32"], 4000000000u);
  EXPECT_EQ(j["u64"], std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(j["f"], 1.25);
  // msgpack has NaN and infinities: float64 as they are, as triton.profiler writes them.
  EXPECT_TRUE(std::isnan(j["nan"].get<double>()));
  EXPECT_EQ(j["inf"].get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(j["ninf"].get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(j["t"], true);
  EXPECT_EQ(j["s31"].get<std::string>().size(), 31u);
  EXPECT_EQ(j["s255"].get<std::string>().size(), 255u);
  EXPECT_EQ(j["s70k"].get<std::string>().size(), 70000u);
  EXPECT_EQ(j["utf8"], "héllo ✓");
  EXPECT_EQ(j["arr"], json::parse("[1, {}, []]"));
  EXPECT_EQ(j["empty"], json::object());
  EXPECT_EQ(j.size(), 21u);
}

TEST(Msgpack, HatchetTreeEqualsTheJsonTree) {
  CallTree tree;
  CallTree::NodeId a = tree.child(CallTree::kRoot, id("scope \"a\""));
  CallTree::NodeId k = tree.child(a, id(std::string(300, 'k')));
  tree.add_kernel(k, 1234, 1, DeviceType::kCuda);
  tree.add_kernel(tree.child(CallTree::kRoot, id("hip_k")), 5, 0, DeviceType::kHip);
  tree.add_metric(a, id("flops16"), 2.5);
  tree.add_metric(a, id("bytes"), int64_t{1} << 40);
  tree.add_metric(a, id("hist"), std::vector<int64_t>{1, -2, 3});
  tree.add_metric(k, id("ratio"), std::vector<double>{0.5, 1.0});
  DeviceInfo d;
  d.id = 1;
  d.arch = "90";
  d.num_sms = 132;
  d.clock_rate = 1980000;
  std::vector<DeviceInfo> devices = {d};
  CollectionStats stats{3, 4};
  json from_json = json::parse(hatchet_json(tree, devices, stats));
  json from_msgpack = decode(hatchet_msgpack(tree, devices, stats));
  EXPECT_EQ(from_json, from_msgpack);
  EXPECT_EQ(from_msgpack[0]["metrics"]["dropped_records"], 3);
}

}  // namespace
}  // namespace proton
