// The msgpack side of the Hatchet readers (every header width a writer may choose, every number
// width, clear errors for the rest), range checks of numbers read from files, and paths that are
// not profiles.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "format/msgpack_cursor.h"
#include "test_util.h"
#include "viewer/hatchet_reader.h"
#include "viewer/rank_file.h"
#include "viewer/trace_merge.h"

namespace proton::viewer {
namespace {

using nlohmann::json;
using testing::find_node;
using testing::fixture;

// Header widths a msgpack writer may pick: the shortest form, or always 16- or 32-bit.
enum class Width { kShortest, k16, k32 };

void put_be(std::string& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_header(std::string& out, size_t n, Width w, uint8_t fix, uint8_t fix_limit, uint8_t m16,
                uint8_t m32) {
  if (w == Width::kShortest && n < fix_limit) {
    out.push_back(static_cast<char>(fix | n));
  } else if (w != Width::k32 && n <= 0xffff) {
    out.push_back(static_cast<char>(m16));
    put_be(out, n, 2);
  } else {
    out.push_back(static_cast<char>(m32));
    put_be(out, n, 4);
  }
}

void put_string(std::string& out, const std::string& s, Width w) {
  if (w == Width::kShortest && s.size() < 32) {
    out.push_back(static_cast<char>(0xa0 | s.size()));
  } else if (w == Width::kShortest && s.size() <= 0xff) {
    out.push_back(static_cast<char>(0xd9));
    put_be(out, s.size(), 1);
  } else if (w != Width::k32) {
    out.push_back(static_cast<char>(0xda));
    put_be(out, s.size(), 2);
  } else {
    out.push_back(static_cast<char>(0xdb));
    put_be(out, s.size(), 4);
  }
  out += s;
}

// JSON to msgpack with the chosen widths: integers as int64/uint64 beyond the shortest form,
// floats as float64.
void encode(const json& j, std::string& out, Width w) {
  switch (j.type()) {
    case json::value_t::object:
      put_header(out, j.size(), w, 0x80, 16, 0xde, 0xdf);
      for (const auto& [k, v] : j.items()) {
        put_string(out, k, w);
        encode(v, out, w);
      }
      return;
    case json::value_t::array:
      put_header(out, j.size(), w, 0x90, 16, 0xdc, 0xdd);
      for (const auto& v : j)
        encode(v, out, w);
      return;
    case json::value_t::string:
      put_string(out, j.get<std::string>(), w);
      return;
    case json::value_t::number_unsigned:
      if (w == Width::kShortest && j.get<uint64_t>() < 128) {
        out.push_back(static_cast<char>(j.get<uint64_t>()));
      } else {
        out.push_back(static_cast<char>(0xcf));
        put_be(out, j.get<uint64_t>(), 8);
      }
      return;
    case json::value_t::number_integer:
      out.push_back(static_cast<char>(0xd3));
      put_be(out, static_cast<uint64_t>(j.get<int64_t>()), 8);
      return;
    case json::value_t::number_float:
      out.push_back(static_cast<char>(0xcb));
      put_be(out, std::bit_cast<uint64_t>(j.get<double>()), 8);
      return;
    case json::value_t::boolean:
      out.push_back(static_cast<char>(j.get<bool>() ? 0xc3 : 0xc2));
      return;
    default:
      out.push_back(static_cast<char>(0xc0));
      return;
  }
}

std::string to_msgpack(const json& j, Width w) {
  std::string out;
  encode(j, out, w);
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Same tree, names, metrics and devices.
void expect_same(const Profile& a, const Profile& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  ASSERT_EQ(a.metrics.size(), b.metrics.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    EXPECT_EQ(a.nodes[i].parent, b.nodes[i].parent);
    auto ta = a.nodes[i].text, tb = b.nodes[i].text;
    std::sort(ta.begin(), ta.end());
    std::sort(tb.begin(), tb.end());
    EXPECT_EQ(ta, tb);
  }
  // Metrics by name: the msgpack encoding here writes keys in sorted order.
  for (size_t m = 0; m < a.metrics.size(); ++m) {
    int32_t other = b.find_metric(a.metrics[m].name);
    ASSERT_GE(other, 0) << a.metrics[m].name;
    EXPECT_EQ(a.metrics[m].integral, b.metrics[static_cast<size_t>(other)].integral);
    auto x = a.stored(static_cast<int32_t>(m)), y = b.stored(other);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_TRUE(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) << a.metrics[m].name;
  }
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    EXPECT_EQ(a.devices[d].arch, b.devices[d].arch);
    EXPECT_EQ(a.devices[d].num_sms, b.devices[d].num_sms);
  }
}

TEST(MsgpackReader, EveryHeaderWidthReadsLikeTheJson) {
  for (const char* name : {"triton_style.json", "proton_style.json"}) {
    std::string text = slurp(fixture(name));
    Profile from_json = parse_hatchet(text);
    json j = json::parse(text);
    for (Width w : {Width::kShortest, Width::k16, Width::k32}) {
      SCOPED_TRACE(std::string(name) + " width " + std::to_string(static_cast<int>(w)));
      std::string packed = to_msgpack(j, w);
      Profile from_msgpack = parse_hatchet(packed);
      expect_same(from_json, from_msgpack);
      // The streaming reader of the merge accepts the same bytes, with the same tree.
      RankFile file = parse_rank_file(packed);
      EXPECT_EQ(file.nodes.size(), from_json.nodes.size());
    }
  }
}

TEST(MsgpackReader, LoadsAFileByContentNotName) {
  std::string path = ::testing::TempDir() + "/msgpack_reader.hatchet_msgpack";
  json j = json::parse(slurp(fixture("triton_style.json")));
  { std::ofstream(path, std::ios::binary) << to_msgpack(j, Width::k32); }
  Profile p = load_hatchet(path);
  EXPECT_GE(find_node(p, "matmul_kernel"), 0);
  std::remove(path.c_str());
}

// [{"frame": {"name": "r"}, "metrics": {"m": <number>}}] with the number's bytes as given.
Profile one_metric(const std::string& number_bytes) {
  std::string s = "\x91\x82";
  s += "\xa5"
       "frame"
       "\x81\xa4"
       "name"
       "\xa1r";
  s += "\xa7"
       "metrics"
       "\x81\xa1m";
  s += number_bytes;
  return parse_hatchet(s);
}

double metric_value(const std::string& number_bytes) {
  Profile p = one_metric(number_bytes);
  return p.stored(p.find_metric("m"))[0];
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b)
    s.push_back(static_cast<char>(x));
  return s;
}

TEST(MsgpackReader, EveryNumberWidth) {
  EXPECT_EQ(metric_value(bytes({0x05})), 5);                                     // fixint
  EXPECT_EQ(metric_value(bytes({0xfb})), -5);                                    // negative fixint
  EXPECT_EQ(metric_value(bytes({0xcc, 0xff})), 255);                             // uint8
  EXPECT_EQ(metric_value(bytes({0xcd, 0xff, 0xfe})), 65534);                     // uint16
  EXPECT_EQ(metric_value(bytes({0xce, 0xff, 0xff, 0xff, 0xff})), 4294967295.0);  // uint32
  EXPECT_EQ(metric_value(bytes({0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})),
            18446744073709551615.0);                                              // uint64
  EXPECT_EQ(metric_value(bytes({0xd0, 0x80})), -128);                             // int8
  EXPECT_EQ(metric_value(bytes({0xd1, 0x80, 0x00})), -32768);                     // int16
  EXPECT_EQ(metric_value(bytes({0xd2, 0x80, 0x00, 0x00, 0x00})), -2147483648.0);  // int32
  EXPECT_EQ(metric_value(bytes({0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})), -9223372036854775808.0);
  EXPECT_EQ(metric_value(bytes({0xca, 0x3f, 0xc0, 0x00, 0x00})), 1.5);        // float32
  EXPECT_EQ(metric_value(bytes({0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0})), 2.5);  // float64
  Profile ints = one_metric(bytes({0xcd, 0x01, 0x00}));
  EXPECT_TRUE(ints.metrics[ints.find_metric("m")].integral);
  Profile floats = one_metric(bytes({0xcb, 0x40, 0x04, 0, 0, 0, 0, 0, 0}));
  EXPECT_FALSE(floats.metrics[floats.find_metric("m")].integral);
}

TEST(MsgpackReader, StringWidthsAndSkippedValues) {
  std::string name(300, 'k');
  for (Width w : {Width::kShortest, Width::k16, Width::k32}) {
    json j = json::array({{{"frame", {{"name", name}}},
                           {"unknown", {nullptr, true, 1.5, json::array({1, 2}), "x"}}}});
    Profile p = parse_hatchet(to_msgpack(j, w));
    EXPECT_EQ(p.nodes[0].name, name);
  }
  // Binary and extension values under a key the reader does not know are skipped.
  std::string s = "\x91\x83";
  s += "\xa5"
       "frame"
       "\x81\xa4"
       "name"
       "\xa1r";
  s += "\xa3"
       "bin" +
       bytes({0xc4, 0x02, 0x00, 0x01});
  s += "\xa3"
       "ext" +
       bytes({0xd5, 0x01, 0x00, 0x01});
  EXPECT_EQ(parse_hatchet(s).nodes[0].name, "r");
}

// msgpack lets a map key be any value; a profile is JSON's model, where keys are strings. A
// map with another key is refused wherever it sits, in a value the reader reads (metric_rules) or
// in one it skips, and the compact rank-file reader agrees with the full reader on each.
TEST(MsgpackReader, MapKeysAreStringsEvenWhereSkipped) {
  std::string root = "\x91\x82";
  root +=
      "\xa5"
      "frame"
      "\x81\xa4"
      "name"
      "\xa1r";
  for (const char* key : {"metric_rules", "unknown"}) {
    std::string s = root;
    s.push_back(static_cast<char>(0xa0 | std::string(key).size()));
    s += key;
    s += bytes({0x81, 0x91, 0xa1, 'x', 0xa3, 'e', 'x', 'c'});  // {["x"]: "exc"}
    EXPECT_THROW(parse_hatchet(s), InputError) << key;
    RankFile file;
    EXPECT_THROW(parse_rank_file(s, file), InputError) << key;
    std::string ok = root;
    ok.push_back(static_cast<char>(0xa0 | std::string(key).size()));
    ok += key;
    ok += bytes({0x81, 0xa1, 'x', 0xa3, 'e', 'x', 'c'});  // {"x": "exc"}
    EXPECT_NO_THROW(parse_hatchet(ok)) << key;
    EXPECT_NO_THROW(parse_rank_file(ok, file)) << key;
  }
  // metric_rules that is not a map: refused by both.
  std::string rules = root + "\xac" + "metric_rules" + bytes({0x90});
  EXPECT_THROW(parse_hatchet(rules), InputError);
  RankFile file;
  EXPECT_THROW(parse_rank_file(rules, file), InputError);
}

std::string error_of(const std::string& data) {
  try {
    parse_hatchet(data);
  } catch (const InputError& e) {
    return std::to_string(e.offset()) + ": " + e.what();
  }
  return "accepted";
}

TEST(MsgpackReader, ClearErrors) {
  EXPECT_EQ(error_of(bytes({0x90})), "1: empty array: the profile has no root node");
  EXPECT_EQ(error_of(bytes({0x91, 0x05})), "1: expected a node object, found integer");
  EXPECT_EQ(error_of(bytes({0x81, 0xa1, 'a', 0x01})),
            "0: a profile must be a JSON array [root, device_map], found map");
  // A count beyond the bytes left, named where the header starts.
  EXPECT_EQ(error_of(bytes({0xdd, 0x7f, 0xff, 0xff, 0xff})),
            "0: array of 2147483647 elements runs past the end of the input");
  EXPECT_EQ(error_of(bytes({0x91, 0x81, 0xdb, 0xff, 0xff, 0xff, 0xff})),
            "7: a string of 4294967295 bytes runs past the end of the input (0 left)");
  EXPECT_EQ(error_of(bytes({0x91, 0x81, 0xa1, 'x', 0xc1})), "4: invalid msgpack byte 0xc1");
  EXPECT_EQ(error_of(bytes({0x91, 0x81, 0xa1, 'x', 0xcd, 0x01})),
            "5: a value of 2 bytes runs past the end of the input (1 left)");
  std::string metric_bin = "\x91\x82";
  metric_bin +=
      "\xa5"
      "frame"
      "\x81\xa4"
      "name"
      "\xa1r";
  metric_bin +=
      "\xa7"
      "metrics"
      "\x81\xa1m" +
      bytes({0xc4, 0x00});
  EXPECT_EQ(error_of(metric_bin),
            "27: metric \"m\" must be a number, an array of numbers or a string, found binary");
  std::string trailing = to_msgpack(json::array({{{"frame", {{"name", "r"}}}}}), Width::kShortest);
  EXPECT_EQ(error_of(trailing + "\x01"), std::to_string(trailing.size()) +
                                             ": unexpected byte 0x01 after the end of the profile");
  // A non-finite float is a metric value like any other (msgpack carries it as it is), but a
  // number that must be finite (a device field) is refused.
  EXPECT_EQ(error_of(std::string("\x91\x82\xa5"
                                 "frame"
                                 "\x81\xa4"
                                 "name"
                                 "\xa1r"
                                 "\xa7"
                                 "metrics"
                                 "\x81\xa1m") +
                     bytes({0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0})),
            "accepted");
  json device =
      json::array({{{"frame", {{"name", "r"}}}},
                   {{"CUDA", {{"0", {{"arch", std::numeric_limits<double>::infinity()}}}}}}});
  EXPECT_NE(error_of(to_msgpack(device, Width::kShortest)), "accepted");
}

// A device number beyond what an integer holds is refused with the field's name, by both
// readers and in both encodings (converting it was undefined behaviour).
TEST(RangeChecks, DeviceArchBeyondAnInteger) {
  std::string text = R"([{"frame": {"name": "r"}}, {"CUDA": {"0": {"arch": 1e30}}}])";
  std::string expected =
      "\"0\" \"arch\" must be a whole number from 0 to 9007199254740992, found 1e+30";
  for (const std::string& data : {text, to_msgpack(json::parse(text), Width::k32)}) {
    try {
      parse_hatchet(data);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
    try {
      parse_rank_file(data);
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
  for (const char* bad : {"-1", "90.5", "1e300", "-1e30"}) {
    std::string t =
        R"([{"frame": {"name": "r"}}, {"CUDA": {"0": {"arch": )" + std::string(bad) + "}}}]";
    EXPECT_THROW(parse_hatchet(t), InputError) << bad;
    EXPECT_THROW(parse_rank_file(t), InputError) << bad;
  }
  Profile ok = parse_hatchet(R"([{"frame": {"name": "r"}}, {"CUDA": {"0": {"arch": 90}}}])");
  EXPECT_EQ(ok.devices[0].arch, "90");
}

TEST(RangeChecks, TraceHeaderNumbers) {
  for (const char* field :
       {"\"baseTimeNanoseconds\": 1e30", "\"otherData\": {\"proton_rank\": 1e30}",
        "\"otherData\": {\"proton_gpu_offset_ns\": -1e300}"}) {
    std::string text = std::string("{\"traceEvents\": [], ") + field + "}";
    try {
      read_trace_header(text);
      ADD_FAILURE() << "accepted " << field;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("must be a whole number"), std::string::npos);
    }
  }
  EXPECT_EQ(read_trace_header(R"({"traceEvents": [], "otherData": {"proton_rank": 3}})").rank, 3);
}

std::string load_error(const std::string& path) {
  try {
    load_hatchet(path);
  } catch (const FileError& e) {
    return e.what();
  }
  return "loaded";
}

std::string temp_file(const std::string& name, const std::string& contents) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(NotAProfile, DirectoryFifoAndUnreadable) {
  std::string dir = ::testing::TempDir();
  EXPECT_EQ(load_error(dir), dir + ": a directory, not a profile file");
  std::string fifo = dir + "/not_a_profile.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Never opened for reading as a FIFO: that would block here forever without a writer.
  EXPECT_EQ(load_error(fifo), fifo + ": a FIFO (named pipe), not a profile file");
  ::unlink(fifo.c_str());
  EXPECT_EQ(load_error("/dev/null"), "/dev/null: a character device, not a profile file");
  // A regular file whose read fails (the kernel refuses reading a process's memory at 0).
  EXPECT_EQ(load_error("/proc/self/mem"), "/proc/self/mem: cannot read: Input/output error");
  if (::geteuid() != 0) {  // root reads a file whatever its mode
    std::string locked = temp_file("locked.hatchet", "[]");
    ::chmod(locked.c_str(), 0);
    EXPECT_EQ(load_error(locked), locked + ": cannot open: Permission denied");
    std::remove(locked.c_str());
  }
}

TEST(NotAProfile, ContentsNamed) {
  struct Case {
    std::string contents, says;
  };
  for (const Case& c : {
           Case{"", "an empty file, not a profile"},
           Case{"\n \n", "only whitespace, not a profile"},
           Case{bytes({0x1f, 0x8b, 0x08, 0x00}), "gzip-compressed data"},
           Case{bytes({0x00, 0x01, 0xfe}), "binary data (first byte 0x00)"},
           Case{"x\x01\x02", ""},
           Case{R"({"traceEvents": [{"ph": "X", "ts": 1}]})", "a Chrome trace"},
           Case{R"([{"ph": "X", "ts": 1, "name": "k"}])", "a Chrome trace (an array of events)"},
       }) {
    std::string path = temp_file("contents.hatchet", c.contents);
    std::string error = load_error(path);
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    if (c.says.empty()) {
      EXPECT_EQ(error.rfind(path + ":0: ", 0), 0u) << error;  // the parser names the byte
    } else {
      EXPECT_EQ(error.rfind(path + ": " + c.says, 0), 0u) << error;
    }
    std::remove(path.c_str());
  }
  std::string trace = temp_file("t.chrome_trace", R"({"traceEvents": []})");
  EXPECT_NE(load_error(trace).find("proton-viewer merge --output-format trace"), std::string::npos);
  std::remove(trace.c_str());
}

TEST(NotAProfile, ByteOrderMarkIsSkipped) {
  std::string text = slurp(fixture("triton_style.json"));
  expect_same(parse_hatchet(text), parse_hatchet("\xef\xbb\xbf" + text));
  EXPECT_EQ(parse_rank_file("\xef\xbb\xbf" + text).nodes.size(), parse_hatchet(text).nodes.size());
  // Offsets still count the mark's three bytes.
  try {
    parse_hatchet("\xef\xbb\xbf[1]");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(e.offset(), 4u);
  }
}

}  // namespace
}  // namespace proton::viewer
