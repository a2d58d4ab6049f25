// A pull parser over MessagePack with JsonCursor's interface, so the Hatchet reader walks a
// `.hatchet_msgpack` file with the same code (and the same checks) as a `.hatchet` one.
//
// The cursor presents msgpack as the JSON token stream it encodes: peek() answers '{', '[',
// '"', a digit (any integer or float), 'n' (nil), 't'/'f' (booleans), and, between the elements
// of a container, ',' ':' '}' or ']' from the element counts of the headers. Every header width
// is read (fixmap/map16/map32, fixarray/array16/array32, fixstr/str8/16/32, every int, uint and
// float width); binary and extension values are skipped where any value may be skipped and named
// in errors elsewhere. Lengths are checked against the bytes left before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/json_cursor.h"

namespace proton::format {

class MsgpackCursor {
 public:
  static constexpr int kMaxSkipDepth = JsonCursor::kMaxSkipDepth;

  explicit MsgpackCursor(std::string_view data) : data_(data) {}

  size_t offset() const { return pos_; }
  char peek();
  bool consume(char c);
  void expect(char c, std::string_view what);
  std::string read_string();
  void read_string_into(std::string& out);
  // Integers are integral; floats are not (as a JSON number with a fraction). Non-finite floats
  // are refused as JSON's out-of-range numbers are, except for a `metric_value`, which may be
  // NaN or infinite (msgpack carries them as they are).
  JsonNumber read_number(bool metric_value = false);
  void skip_value(int depth = 0);
  void expect_end();
  std::string_view next_type_name();

  [[noreturn]] void fail(const std::string& reason) const { throw InputError(pos_, reason); }
  [[noreturn]] static void fail_at(size_t offset, const std::string& reason) {
    throw InputError(offset, reason);
  }

 private:
  enum class State : uint8_t { kValue, kSeparator, kColon };
  struct Frame {
    uint64_t items;  // values still to come: elements of an array, keys and values of a map
    bool is_map;
  };

  uint64_t read_be(int bytes, const char* what);
  void need(uint64_t bytes, const char* what);
  void open();
  void complete();  // one value of the innermost container has been read
  void skip_scalar();

  std::string_view data_;
  size_t pos_ = 0;
  std::vector<Frame> frames_;
  State state_ = State::kValue;
};

// True when `data` starts like a msgpack document (a map or array header): no JSON text does.
bool looks_like_msgpack(std::string_view data);

}  // namespace proton::format
