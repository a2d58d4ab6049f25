#include "format/msgpack_cursor.h"

#include <bit>
#include <cmath>

namespace proton::format {

namespace {

// The token a msgpack marker byte starts, as JsonCursor::peek would see its JSON form.
char token_of(uint8_t b) {
  if (b <= 0x7f || b >= 0xe0) return '0';                 // positive / negative fixint
  if (b <= 0x8f || b == 0xde || b == 0xdf) return '{';    // fixmap, map16, map32
  if (b <= 0x9f || b == 0xdc || b == 0xdd) return '[';    // fixarray, array16, array32
  if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) return '"';  // fixstr, str8/16/32
  if (b == 0xc0) return 'n';
  if (b == 0xc2) return 'f';
  if (b == 0xc3) return 't';
  if (b >= 0xc4 && b <= 0xc6) return 'b';                                // bin8/16/32
  if ((b >= 0xc7 && b <= 0xc9) || (b >= 0xd4 && b <= 0xd8)) return 'x';  // ext, fixext
  if (b >= 0xca && b <= 0xd3) return '0';  // float32/64, uint8..64, int8..64
  return '?';                              // 0xc1: never used
}

std::string hex_byte(uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

}  // namespace

bool looks_like_msgpack(std::string_view data) {
  if (data.empty()) return false;
  char t = token_of(static_cast<uint8_t>(data[0]));
  return static_cast<uint8_t>(data[0]) >= 0x80 && (t == '[' || t == '{');
}

void MsgpackCursor::need(uint64_t bytes, const char* what) {
  if (bytes > data_.size() - pos_) {
    fail(std::string(what) + " of " + std::to_string(bytes) + " bytes runs past the end of the " +
         "input (" + std::to_string(data_.size() - pos_) + " left)");
  }
}

uint64_t MsgpackCursor::read_be(int bytes, const char* what) {
  if (static_cast<size_t>(bytes) > data_.size() - pos_) fail(std::string("truncated ") + what);
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | static_cast<uint8_t>(data_[pos_++]);
  return v;
}

char MsgpackCursor::peek() {
  if (!frames_.empty()) {
    const Frame& f = frames_.back();
    if (state_ == State::kSeparator) return f.items > 0 ? ',' : (f.is_map ? '}' : ']');
    if (state_ == State::kColon) return ':';
  }
  if (pos_ >= data_.size()) return '\0';
  return token_of(static_cast<uint8_t>(data_[pos_]));
}

void MsgpackCursor::complete() {
  if (frames_.empty()) return;
  Frame& f = frames_.back();
  --f.items;
  state_ = f.is_map && f.items % 2 == 1 ? State::kColon : State::kSeparator;
}

void MsgpackCursor::open() {
  size_t start = pos_;
  auto b = static_cast<uint8_t>(data_[pos_++]);
  bool is_map = token_of(b) == '{';
  uint64_t n = 0;
  if (b == 0xde || b == 0xdc) {
    n = read_be(2, "container header");
  } else if (b == 0xdf || b == 0xdd) {
    n = read_be(4, "container header");
  } else {
    n = b & 0x0f;
  }
  uint64_t items = is_map ? 2 * n : n;
  // Every value takes at least one byte: a count beyond the bytes left is a broken header.
  if (items > data_.size() - pos_) {
    fail_at(start, std::string(is_map ? "map of " : "array of ") + std::to_string(n) +
                       (is_map ? " entries" : " elements") + " runs past the end of the input");
  }
  frames_.push_back({items, is_map});
  state_ = items > 0 ? State::kValue : State::kSeparator;
}

bool MsgpackCursor::consume(char c) {
  switch (c) {
    case ',':
      if (frames_.empty() || state_ != State::kSeparator || frames_.back().items == 0) return false;
      state_ = State::kValue;
      return true;
    case ':':
      if (frames_.empty() || state_ != State::kColon) return false;
      state_ = State::kValue;
      return true;
    case '}':
    case ']':
      if (frames_.empty() || state_ != State::kSeparator || frames_.back().items != 0 ||
          frames_.back().is_map != (c == '}')) {
        return false;
      }
      frames_.pop_back();
      state_ = State::kValue;
      complete();
      return true;
    case '{':
    case '[':
      if (peek() != c) return false;
      open();
      return true;
    default:
      return false;
  }
}

void MsgpackCursor::expect(char c, std::string_view what) {
  if (!consume(c)) {
    fail("expected " + std::string(what) + ", found " + std::string(next_type_name()));
  }
}

std::string_view MsgpackCursor::next_type_name() {
  switch (peek()) {
    case '{':
      return "map";
    case '[':
      return "array";
    case '"':
      return "string";
    case 'n':
      return "nil";
    case 't':
    case 'f':
      return "boolean";
    case 'b':
      return "binary";
    case 'x':
      return "extension";
    case '?':
      return "the unused byte 0xc1";
    case ',':
      return "more elements";
    case ':':
      return "a map value";
    case '}':
      return "the end of a map";
    case ']':
      return "the end of an array";
    case '\0':
      return "end of input";
    default: {
      auto b = static_cast<uint8_t>(data_[pos_]);
      return b == 0xca || b == 0xcb ? "float" : "integer";
    }
  }
}

std::string MsgpackCursor::read_string() {
  std::string out;
  read_string_into(out);
  return out;
}

void MsgpackCursor::read_string_into(std::string& out) {
  if (peek() != '"') fail("expected a string, found " + std::string(next_type_name()));
  auto b = static_cast<uint8_t>(data_[pos_++]);
  uint64_t n = b == 0xd9   ? read_be(1, "string header")
               : b == 0xda ? read_be(2, "string header")
               : b == 0xdb ? read_be(4, "string header")
                           : b & 0x1f;
  need(n, "a string");
  out.append(data_.substr(pos_, n));
  pos_ += n;
  complete();
}

JsonNumber MsgpackCursor::read_number(bool metric_value) {
  char t = peek();
  if (t != '0') fail("expected a number, found " + std::string(next_type_name()));
  size_t start = pos_;
  auto b = static_cast<uint8_t>(data_[pos_++]);
  JsonNumber number;
  number.integral = true;
  if (b <= 0x7f) {
    number.value = b;
  } else if (b >= 0xe0) {
    number.value = static_cast<int8_t>(b);
  } else if (b == 0xca) {
    number.integral = false;
    number.value = std::bit_cast<float>(static_cast<uint32_t>(read_be(4, "float32")));
  } else if (b == 0xcb) {
    number.integral = false;
    number.value = std::bit_cast<double>(read_be(8, "float64"));
  } else if (b >= 0xcc && b <= 0xcf) {  // uint8/16/32/64
    number.value = static_cast<double>(read_be(1 << (b - 0xcc), "unsigned integer"));
  } else {  // 0xd0..0xd3: int8/16/32/64, two's complement of the width read
    int bytes = 1 << (b - 0xd0);
    uint64_t raw = read_be(bytes, "integer");
    int shift = 64 - 8 * bytes;
    number.value = static_cast<double>(static_cast<int64_t>(raw << shift) >> shift);
  }
  if (!metric_value && !std::isfinite(number.value)) fail_at(start, "number out of range");
  complete();
  return number;
}

void MsgpackCursor::skip_scalar() {
  size_t start = pos_;
  auto b = static_cast<uint8_t>(data_[pos_++]);
  uint64_t n = 0;
  switch (token_of(b)) {
    case '"':
      pos_ = start;
      {
        std::string ignored;
        read_string_into(ignored);
      }
      return;
    case 'n':
    case 't':
    case 'f':
      break;
    case 'b':
      n = read_be(1 << (b - 0xc4), "binary header");
      break;
    case 'x':
      if (b >= 0xd4) {
        n = 1 + (uint64_t{1} << (b - 0xd4));  // type byte + 1, 2, 4, 8 or 16 bytes
      } else {
        n = 1 + read_be(1 << (b - 0xc7), "extension header");
      }
      break;
    case '0':
      if (b >= 0xca && b <= 0xd3) {
        static constexpr uint8_t kWidth[] = {4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
        n = kWidth[b - 0xca];
      }
      break;
    default:
      fail_at(start, "invalid msgpack byte " + hex_byte(b));
  }
  need(n, "a value");
  pos_ += n;
  complete();
}

void MsgpackCursor::skip_value(int depth) {
  if (depth > kMaxSkipDepth) fail("nesting deeper than " + std::to_string(kMaxSkipDepth));
  char t = peek();
  if (t == '{') {  // as in JSON, a map's keys are strings wherever they are, skipped or read
    open();
    if (consume('}')) return;
    std::string key;
    do {
      key.clear();
      read_string_into(key);
      expect(':', "':'");
      skip_value(depth + 1);
    } while (consume(','));
    expect('}', "',' or '}'");
    return;
  }
  if (t == '[') {
    open();
    if (consume(']')) return;
    do {
      skip_value(depth + 1);
    } while (consume(','));
    expect(']', "',' or ']'");
    return;
  }
  if (t == '\0') fail("unexpected end of input");
  if (t == ',' || t == ':' || t == '}' || t == ']') fail("expected a value");
  skip_scalar();
}

void MsgpackCursor::expect_end() {
  if (!frames_.empty()) fail("expected the end of the enclosing container");
  if (pos_ < data_.size()) {
    fail("unexpected byte " + hex_byte(static_cast<uint8_t>(data_[pos_])) +
         " after the end of the profile");
  }
}

}  // namespace proton::format
