#include "format/json_writer.h"

#include <charconv>
#include <cmath>

namespace proton {

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.back()) out_.push_back(',');
  first_.back() = false;
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  first_.pop_back();
  out_.push_back('}');
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  first_.pop_back();
  out_.push_back(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  append_string(out_, k);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  separate();
  append_string(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  append_int(out_, v);
  return *this;
}

void JsonWriter::append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, end);
}

JsonWriter& JsonWriter::value(uint64_t v) {
  separate();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out_.append(buf, end);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separate();
  append_double(out_, v);
  return *this;
}

void JsonWriter::append_double(std::string& out, double v) {
  // JSON has no NaN or infinity. NaN is null, as triton.profiler (nlohmann::json) writes it.
  // Infinities are +-1e999: valid JSON number syntax that Python's json, JavaScript and our
  // reader take as +-inf (Triton writes null, losing the sign). Parsers that bound the range
  // (nlohmann::json, orjson) refuse it: docs/metrics.md says so.
  if (std::isnan(v)) {
    out.append("null");
    return;
  }
  if (std::isinf(v)) {
    out.append(v > 0 ? "1e999" : "-1e999");
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest round-trip form
  std::string_view text(buf, static_cast<size_t>(end - buf));
  out.append(text);
  // Keep floats recognisable as floats to readers that type by syntax.
  if (text.find_first_of(".eEn") == std::string_view::npos) out.append(".0");
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_.append("null");
  return *this;
}

void JsonWriter::append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default:
        if (u < 0x20) {
          out.append("\\u00");
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 15]);
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

}  // namespace proton
