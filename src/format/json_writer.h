// A small streaming JSON writer: appends to a string, tracks commas, escapes strings.
//
// Output files are written by walking our own structures once; no DOM is built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace proton {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(double v);  // NaN as null, +-inf as +-1e999
  JsonWriter& value(bool v);
  JsonWriter& null();

  /// Appends `s` as a quoted, escaped JSON string.
  static void append_string(std::string& out, std::string_view s);
  /// Appends `v` as value(int64_t) writes it.
  static void append_int(std::string& out, int64_t v);
  /// Appends `v` as value(double) writes it: NaN null, +-inf +-1e999, shortest round-trip
  /// digits, ".0" on a float that would otherwise read back as an integer.
  static void append_double(std::string& out, double v);

 private:
  void separate();  // comma before a value or key when needed

  std::string& out_;
  std::vector<bool> first_ = {true};  // per open container: nothing written yet
  bool after_key_ = false;
};

}  // namespace proton
