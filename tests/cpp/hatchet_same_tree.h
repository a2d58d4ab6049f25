// One small profile, byte for byte as the session's writer writes it (io/hatchet_writer.h), in
// JSON and in msgpack. The core tests check that the session still writes exactly these bytes;
// the viewer tests check that the viewer's writers, given the profile read from them, write the
// same JSON bytes. The frame name and the string metric hold control characters, DEL, valid and
// invalid UTF-8; the metrics hold NaN and both infinities.
//
//   ROOT  {n: 0, x: 0.0, up: 0.0, down: 0.0, time (ns): 0, count: 0}
//   └─ kOddName  {n: 3, x: NaN, up: +inf, down: -inf, s: "\x02\xfe"}
//      └─ k  (one 12 ns launch on CUDA device 0)
//   device map: CUDA 0, arch "90", 132 SMs
#pragma once

#include <string>
#include <string_view>

namespace proton::same_tree {

inline constexpr std::string_view kOddName = "op\b\x01\x1f\"\\\n\t\x7f \xc3\xa9 \xff\xc3(";
inline constexpr std::string_view kOddText = "\x02\xfe";

inline constexpr std::string_view kJson =
    "[{\"frame\":{\"name\":\"ROOT\",\"type\":\"function\"},\"metrics\":{\"n\":0,\"x\":0.0,"
    "\"up\":0.0,\"down\":0.0,\"time (ns)\":0,\"count\":0},"
    "\"children\":[{\"frame\":{\"name\":\"op\\u0008\\u0001\\u001f\\\"\\\\\\n\\t\x7f \xc3\xa9 "
    "\xff\xc3(\","
    "\"type\":\"function\"},\"metrics\":{\"n\":3,\"x\":null,\"up\":1e999,\"down\":-1e999,"
    "\"s\":\"\\u0002\xfe\"},\"children\":[{\"frame\":{\"name\":\"k\",\"type\":\"function\"},"
    "\"metrics\":{\"time (ns)\":12,\"count\":1,\"device_id\":\"0\",\"device_type\":\"CUDA\"},"
    "\"children\":[]}]}]},{\"CUDA\":{\"0\":{\"arch\":\"90\",\"num_sms\":132,"
    "\"clock_rate\":1755000,\"memory_clock_rate\":2619000,\"bus_width\":5120}}}]\n";

// The msgpack encoding, as hex (bytes() decodes it).
inline constexpr std::string_view kMsgpackHex =
    "dd00000002df00000003a56672616d65df00000002a46e616d65a4524f4f54a474797065a866756e6374696f"
    "6ea76d657472696373df00000006a16e00a178cb0000000000000000a27570cb0000000000000000a4646f77"
    "6ecb0000000000000000a974696d6520286e732900a5636f756e7400a86368696c6472656edd00000001df00"
    "000003a56672616d65df00000002a46e616d65b16f7008011f225c0a097f20c3a920ffc328a474797065a866"
    "756e6374696f6ea76d657472696373df00000005a16e03a178cb7ff8000000000000a27570cb7ff000000000"
    "0000a4646f776ecbfff0000000000000a173a202fea86368696c6472656edd00000001df00000003a5667261"
    "6d65df00000002a46e616d65a16ba474797065a866756e6374696f6ea76d657472696373df00000004a97469"
    "6d6520286e73290ca5636f756e7401a96465766963655f6964a130ab6465766963655f74797065a443554441"
    "a86368696c6472656edd00000000df00000001a443554441df00000001a130df00000005a461726368a23930"
    "a76e756d5f736d73cc84aa636c6f636b5f72617465ce001ac778b16d656d6f72795f636c6f636b5f72617465"
    "ce0027f678a96275735f7769647468cd1400";

inline std::string bytes(std::string_view hex) {
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  return out;
}

}  // namespace proton::same_tree
