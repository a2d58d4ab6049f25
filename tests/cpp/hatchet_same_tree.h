// One small profile, byte for byte as the session's writer writes it (io/hatchet_writer.h), in
// JSON and in msgpack. The core tests check that the session still writes exactly these bytes;
// the viewer tests check that the viewer's writers, given the profile read from them, write the
// same JSON bytes. The frame name and the string metric hold control characters, DEL, valid and
// invalid UTF-8; the metrics hold NaN and both infinities.
//
//   ROOT  {n: 0, x: 0.0, up: 0.0, down: 0.0, time (ns): 0, count: 0}, metric_rules {grid_x: pty...}
//   └─ kOddName  {n: 3, x: NaN, up: +inf, down: -inf, s: "\x02\xfe"}
//      └─ k  (one 12 ns launch on CUDA device 0, with its launch facts: grid, block, cluster,
//             registers, shared and local memory; its shortest and longest launch)
//   device map: CUDA 0, arch "90", 132 SMs, with the SM's limits
#pragma once

#include <string>
#include <string_view>

namespace proton::same_tree {

inline constexpr std::string_view kOddName = "op\b\x01\x1f\"\\\n\t\x7f \xc3\xa9 \xff\xc3(";
inline constexpr std::string_view kOddText = "\x02\xfe";

inline constexpr std::string_view kJson =
    "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},\"metrics\":{\"n\":0,\"x\":0.0,"
    "\"up\":0.0,\"down\":0.0,\"time (ns)\":0,\"count\":0},"
    "\"metric_rules\":{\"grid_x\":\"pty\",\"grid_y\":\"pty\",\"grid_z\":\"pty\","
    "\"block_x\":\"pty\",\"block_y\":\"pty\",\"block_z\":\"pty\",\"cluster_x\":\"pty\","
    "\"cluster_y\":\"pty\",\"cluster_z\":\"pty\",\"registers_per_thread\":\"pty\","
    "\"static_shared_bytes\":\"pty\",\"dynamic_shared_bytes\":\"pty\","
    "\"local_bytes_per_thread\":\"pty\",\"time_min (ns)\":\"pty\",\"time_max (ns)\":\"pty\"},"
    "\"children\":[{\"frame\":{\"name\":\"op\\u0008\\u0001\\u001f\\\"\\\\\\n\\t\x7f \xc3\xa9 "
    "\xff\xc3(\","
    "\"type\":\"function\"},\"metrics\":{\"n\":3,\"x\":null,\"up\":1e999,\"down\":-1e999,"
    "\"s\":\"\\u0002\xfe\"},\"children\":[{\"frame\":{\"name\":\"k\",\"type\":\"function\"},"
    "\"metrics\":{\"time (ns)\":12,\"count\":1,\"grid_x\":264,\"grid_y\":1,\"grid_z\":1,"
    "\"block_x\":384,\"block_y\":1,\"block_z\":1,\"cluster_x\":2,\"cluster_y\":1,"
    "\"cluster_z\":1,\"registers_per_thread\":168,\"static_shared_bytes\":0,"
    "\"dynamic_shared_bytes\":200704,\"local_bytes_per_thread\":0,\"time_min (ns)\":12,"
    "\"time_max (ns)\":12,"
    "\"device_id\":\"0\",\"device_type\":\"CUDA\"},"
    "\"children\":[]}]}]},{\"CUDA\":{\"0\":{\"arch\":\"90\",\"num_sms\":132,"
    "\"clock_rate\":1755000,\"memory_clock_rate\":2619000,\"bus_width\":5120,"
    "\"warp_size\":32,\"max_threads_per_sm\":2048,\"max_warps_per_sm\":64,"
    "\"max_blocks_per_sm\":32,\"registers_per_sm\":65536,\"shared_memory_per_sm\":233472,"
    "\"reserved_shared_memory_per_block\":1024}}}]\n";

// The msgpack encoding, as hex (bytes() decodes it).
inline constexpr std::string_view kMsgpackHex =
    "dd00000002df00000004a56672616d65df00000002a46e616d65a4524f4f54a474797065a866756e6374696f"
    "6ea76d657472696373df00000006a16e00a178cb0000000000000000a27570cb0000000000000000a4646f77"
    "6ecb0000000000000000a974696d6520286e732900a5636f756e7400ac6d65747269635f72756c6573df0000"
    "000fa6677269645f78a3707479a6677269645f79a3707479a6677269645f7aa3707479a7626c6f636b5f78a3"
    "707479a7626c6f636b5f79a3707479a7626c6f636b5f7aa3707479a9636c75737465725f78a3707479a9636c"
    "75737465725f79a3707479a9636c75737465725f7aa3707479b47265676973746572735f7065725f74687265"
    "6164a3707479b37374617469635f7368617265645f6279746573a3707479b464796e616d69635f7368617265"
    "645f6279746573a3707479b66c6f63616c5f62797465735f7065725f746872656164a3707479ad74696d655f"
    "6d696e20286e7329a3707479ad74696d655f6d617820286e7329a3707479a86368696c6472656edd00000001"
    "df00000003a56672616d65df00000002a46e616d65b16f7008011f225c0a097f20c3a920ffc328a474797065"
    "a866756e6374696f6ea76d657472696373df00000005a16e03a178cb7ff8000000000000a27570cb7ff00000"
    "00000000a4646f776ecbfff0000000000000a173a202fea86368696c6472656edd00000001df00000003a566"
    "72616d65df00000002a46e616d65a16ba474797065a866756e6374696f6ea76d657472696373df00000013a9"
    "74696d6520286e73290ca5636f756e7401a6677269645f78cd0108a6677269645f7901a6677269645f7a01a7"
    "626c6f636b5f78cd0180a7626c6f636b5f7901a7626c6f636b5f7a01a9636c75737465725f7802a9636c7573"
    "7465725f7901a9636c75737465725f7a01b47265676973746572735f7065725f746872656164cca8b3737461"
    "7469635f7368617265645f627974657300b464796e616d69635f7368617265645f6279746573ce00031000b6"
    "6c6f63616c5f62797465735f7065725f74687265616400ad74696d655f6d696e20286e73290cad74696d655f"
    "6d617820286e73290ca96465766963655f6964a130ab6465766963655f74797065a443554441a86368696c64"
    "72656edd00000000df00000001a443554441df00000001a130df0000000ca461726368a23930a76e756d5f73"
    "6d73cc84aa636c6f636b5f72617465ce001ac778b16d656d6f72795f636c6f636b5f72617465ce0027f678a9"
    "6275735f7769647468cd1400a9776172705f73697a6520b26d61785f746872656164735f7065725f736dcd08"
    "00b06d61785f77617270735f7065725f736d40b16d61785f626c6f636b735f7065725f736d20b07265676973"
    "746572735f7065725f736dce00010000b47368617265645f6d656d6f72795f7065725f736dce00039000d920"
    "72657365727665645f7368617265645f6d656d6f72795f7065725f626c6f636bcd0400";

inline std::string bytes(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  return out;
}

}  // namespace proton::same_tree
