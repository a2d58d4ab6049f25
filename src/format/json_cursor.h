// A small pull parser over JSON text. Hatchet files (hatchet_reader.h) and Chrome trace headers
// are read with it instead of a DOM library because every rejection must name the byte where the
// input went wrong (a DOM has forgotten positions by the time the shape is checked), nesting must
// be bounded whatever the bytes, and a 100k-node profile must load without building a second
// tree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "format/input_error.h"

namespace proton::format {

struct JsonNumber {
  double value = 0;
  bool integral = false;  // written without fraction or exponent
};

class JsonCursor {
 public:
  // Deeper nesting inside values the reader skips is refused rather than recursed into.
  static constexpr int kMaxSkipDepth = 256;

  explicit JsonCursor(std::string_view text) : text_(text) {}

  size_t offset() const { return pos_; }
  // Skips whitespace and returns the next byte, or '\0' at the end of the input.
  char peek();
  // Consumes `c` if it is next (after whitespace).
  bool consume(char c);
  // Consumes `c` or fails with "expected <what>".
  void expect(char c, std::string_view what);
  std::string read_string();
  // Appends the decoded string to `out` (no allocation when `out` has room): for arenas.
  void read_string_into(std::string& out);
  // `metric_value`: a number beyond the double range reads as +-inf (or a signed zero when tiny)
  // instead of failing; metric values may be infinite, device fields and offsets may not.
  JsonNumber read_number(bool metric_value = false);
  // Consumes any value, refusing nesting deeper than kMaxSkipDepth.
  void skip_value(int depth = 0);
  // Fails unless only whitespace is left.
  void expect_end();

  // Names the JSON type starting at the next byte, for messages ("object", "string", ...).
  std::string_view next_type_name();

  [[noreturn]] void fail(const std::string& reason) const { throw InputError(pos_, reason); }
  [[noreturn]] static void fail_at(size_t offset, const std::string& reason) {
    throw InputError(offset, reason);
  }

 private:
  void read_literal(std::string_view word);
  unsigned read_hex4();

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace proton::format
