#include "format/json_cursor.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "common/utf8.h"

namespace proton::format {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string describe(char c) {
  if (c == '\0') return "end of input";
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    static constexpr char kHex[] = "0123456789abcdef";
    auto u = static_cast<unsigned char>(c);
    return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
  }
  return std::string("'") + c + "'";
}

}  // namespace

char JsonCursor::peek() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
    ++pos_;
  }
  return '\0';
}

bool JsonCursor::consume(char c) {
  if (peek() != c || pos_ >= text_.size()) return false;
  ++pos_;
  return true;
}

void JsonCursor::expect(char c, std::string_view what) {
  char next = peek();
  if (next != c || pos_ >= text_.size()) {
    fail("expected " + std::string(what) + ", found " + describe(next));
  }
  ++pos_;
}

std::string_view JsonCursor::next_type_name() {
  switch (peek()) {
    case '{':
      return "object";
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    case '\0':
      return "end of input";
    default:
      return "number";
  }
}

unsigned JsonCursor::read_hex4() {
  unsigned code = 0;
  for (int i = 0; i < 4; ++i) {
    if (pos_ >= text_.size()) fail("unterminated \\u escape");
    char c = text_[pos_];
    unsigned digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A' + 10);
    } else {
      fail("bad hex digit in \\u escape: " + describe(c));
    }
    code = code * 16 + digit;
    ++pos_;
  }
  return code;
}

std::string JsonCursor::read_string() {
  std::string out;
  read_string_into(out);
  return out;
}

void JsonCursor::read_string_into(std::string& out) {
  expect('"', "a string");
  for (;;) {
    // Copy the run of plain bytes in one go: names are long and rarely escaped.
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\\' &&
           static_cast<unsigned char>(text_[pos_]) >= 0x20) {
      ++pos_;
    }
    out.append(text_.substr(start, pos_ - start));
    if (pos_ >= text_.size()) fail("unterminated string");
    char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c != '\\') fail("control character " + describe(c) + " inside a string");
    ++pos_;
    if (pos_ >= text_.size()) fail("unterminated string");
    char e = text_[pos_++];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code = read_hex4();
        if (code >= 0xd800 && code < 0xdc00 && pos_ + 1 < text_.size() && text_[pos_] == '\\' &&
            text_[pos_ + 1] == 'u') {
          size_t save = pos_;
          pos_ += 2;
          unsigned low = read_hex4();
          if (low >= 0xdc00 && low < 0xe000) {
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          } else {
            pos_ = save;  // lone high surrogate: keep both escapes as separate characters
          }
        }
        ::proton::append_utf8(code, out);
        break;
      }
      default:
        --pos_;
        fail("bad escape \\" + std::string(1, e));
    }
  }
}

JsonNumber JsonCursor::read_number(bool metric_value) {
  peek();
  size_t start = pos_;
  JsonNumber number;
  number.integral = true;
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  if (pos_ >= text_.size() || !is_digit(text_[pos_])) {
    fail("expected a number, found " + describe(pos_ < text_.size() ? text_[pos_] : '\0'));
  }
  if (text_[pos_] == '0') {
    ++pos_;
  } else {
    while (pos_ < text_.size() && is_digit(text_[pos_]))
      ++pos_;
  }
  if (pos_ < text_.size() && text_[pos_] == '.') {
    number.integral = false;
    ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("expected digits after '.'");
    while (pos_ < text_.size() && is_digit(text_[pos_]))
      ++pos_;
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    number.integral = false;
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
    if (pos_ >= text_.size() || !is_digit(text_[pos_])) fail("expected digits in exponent");
    while (pos_ < text_.size() && is_digit(text_[pos_]))
      ++pos_;
  }
  const char* first = text_.data() + start;
  const char* last = text_.data() + pos_;
  auto [ptr, ec] = std::from_chars(first, last, number.value);
  if (ec == std::errc::result_out_of_range && metric_value) {
    // Beyond the double range: 1e999 is how our writers spell an infinity; a tiny magnitude
    // rounds to a signed zero (strtod says which, its caller's text being valid JSON here).
    std::string text(first, last);
    number.value = std::strtod(text.c_str(), nullptr);
    return number;
  }
  if (ec != std::errc() || ptr != last || !std::isfinite(number.value)) {
    fail_at(start, "number out of range");
  }
  return number;
}

void JsonCursor::read_literal(std::string_view word) {
  if (text_.substr(pos_, word.size()) != word) fail("invalid literal");
  pos_ += word.size();
}

void JsonCursor::skip_value(int depth) {
  if (depth > kMaxSkipDepth) fail("nesting deeper than " + std::to_string(kMaxSkipDepth));
  switch (peek()) {
    case '{':
      ++pos_;
      if (consume('}')) return;
      do {
        read_string();
        expect(':', "':'");
        skip_value(depth + 1);
      } while (consume(','));
      expect('}', "',' or '}'");
      return;
    case '[':
      ++pos_;
      if (consume(']')) return;
      do {
        skip_value(depth + 1);
      } while (consume(','));
      expect(']', "',' or ']'");
      return;
    case '"':
      read_string();
      return;
    case 't':
      read_literal("true");
      return;
    case 'f':
      read_literal("false");
      return;
    case 'n':
      read_literal("null");
      return;
    default:
      read_number(/*metric_value=*/true);  // a skipped value may be +-1e999 (trace args)
      return;
  }
}

void JsonCursor::expect_end() {
  if (peek() != '\0' || pos_ < text_.size()) {
    fail("unexpected " + describe(text_[pos_]) + " after the end of the profile");
  }
}

}  // namespace proton::format
