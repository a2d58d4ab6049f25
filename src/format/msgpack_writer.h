// A small MessagePack encoder with the JsonWriter interface, so one walk writes either format.
//
// Maps and arrays are written with 32-bit length headers (0xdf / 0xdd) that are patched when
// the container closes: the walk need not count children first. That is valid MessagePack
// (readers accept any header width); strings and integers use their shortest forms.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace proton {

class MsgpackWriter {
 public:
  explicit MsgpackWriter(std::string& out) : out_(out) {}

  MsgpackWriter& begin_object() { return open(0xdf); }
  MsgpackWriter& end_object() { return close(); }
  MsgpackWriter& begin_array() { return open(0xdd); }
  MsgpackWriter& end_array() { return close(); }
  /// A map key: counted as one entry of the enclosing map (its value follows).
  MsgpackWriter& key(std::string_view k);
  MsgpackWriter& value(std::string_view s);
  MsgpackWriter& value(const char* s) { return value(std::string_view(s)); }
  MsgpackWriter& value(int64_t v);
  MsgpackWriter& value(uint64_t v);
  MsgpackWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  MsgpackWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  MsgpackWriter& value(double v);  // always float64: NaN and +-inf as themselves
  MsgpackWriter& value(bool v);
  MsgpackWriter& null();

 private:
  MsgpackWriter& open(uint8_t marker);
  MsgpackWriter& close();
  void count();  // one more element in the innermost container (keys count for maps)
  void put_be(uint64_t v, int bytes);
  void put_string(std::string_view s);

  std::string& out_;
  struct Open {
    size_t header;   // offset of the 4-byte length to patch
    uint32_t count;  // entries (maps) or elements (arrays) so far
    bool is_map;
  };
  std::vector<Open> open_;
  bool after_key_ = false;
};

}  // namespace proton
