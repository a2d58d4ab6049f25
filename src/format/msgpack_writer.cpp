#include "format/msgpack_writer.h"

#include <bit>
#include <cmath>

namespace proton {

void MsgpackWriter::put_be(uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void MsgpackWriter::count() {
  if (after_key_) {  // the value of a key: the key already counted the entry
    after_key_ = false;
    return;
  }
  if (!open_.empty()) ++open_.back().count;
}

MsgpackWriter& MsgpackWriter::open(uint8_t marker) {
  count();
  out_.push_back(static_cast<char>(marker));
  open_.push_back({out_.size(), 0, marker == 0xdf});
  put_be(0, 4);
  return *this;
}

MsgpackWriter& MsgpackWriter::close() {
  Open o = open_.back();
  open_.pop_back();
  for (int i = 0; i < 4; ++i)
    out_[o.header + i] = static_cast<char>((o.count >> (8 * (3 - i))) & 0xff);
  return *this;
}

void MsgpackWriter::put_string(std::string_view s) {
  size_t n = s.size();
  if (n < 32) {
    out_.push_back(static_cast<char>(0xa0 | n));
  } else if (n <= 0xff) {
    out_.push_back(static_cast<char>(0xd9));
    put_be(n, 1);
  } else if (n <= 0xffff) {
    out_.push_back(static_cast<char>(0xda));
    put_be(n, 2);
  } else {
    out_.push_back(static_cast<char>(0xdb));
    put_be(n, 4);
  }
  out_.append(s);
}

MsgpackWriter& MsgpackWriter::key(std::string_view k) {
  count();
  put_string(k);
  after_key_ = true;
  return *this;
}

MsgpackWriter& MsgpackWriter::value(std::string_view s) {
  count();
  put_string(s);
  return *this;
}

MsgpackWriter& MsgpackWriter::value(uint64_t v) {
  count();
  if (v < 128) {
    out_.push_back(static_cast<char>(v));
  } else if (v <= 0xff) {
    out_.push_back(static_cast<char>(0xcc));
    put_be(v, 1);
  } else if (v <= 0xffff) {
    out_.push_back(static_cast<char>(0xcd));
    put_be(v, 2);
  } else if (v <= 0xffffffffu) {
    out_.push_back(static_cast<char>(0xce));
    put_be(v, 4);
  } else {
    out_.push_back(static_cast<char>(0xcf));
    put_be(v, 8);
  }
  return *this;
}

MsgpackWriter& MsgpackWriter::value(int64_t v) {
  if (v >= 0) return value(static_cast<uint64_t>(v));
  count();
  if (v >= -32) {
    out_.push_back(static_cast<char>(v));  // negative fixint
  } else if (v >= INT8_MIN) {
    out_.push_back(static_cast<char>(0xd0));
    put_be(static_cast<uint64_t>(v), 1);
  } else if (v >= INT16_MIN) {
    out_.push_back(static_cast<char>(0xd1));
    put_be(static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN) {
    out_.push_back(static_cast<char>(0xd2));
    put_be(static_cast<uint64_t>(v), 4);
  } else {
    out_.push_back(static_cast<char>(0xd3));
    put_be(static_cast<uint64_t>(v), 8);
  }
  return *this;
}

MsgpackWriter& MsgpackWriter::value(double v) {
  // Every double as float64, NaN and infinities included (msgpack has them; triton.profiler's
  // msgpack writer writes them the same way).
  count();
  out_.push_back(static_cast<char>(0xcb));
  put_be(std::bit_cast<uint64_t>(v), 8);
  return *this;
}

MsgpackWriter& MsgpackWriter::value(bool v) {
  count();
  out_.push_back(static_cast<char>(v ? 0xc3 : 0xc2));
  return *this;
}

MsgpackWriter& MsgpackWriter::null() {
  count();
  out_.push_back(static_cast<char>(0xc0));
  return *this;
}

}  // namespace proton
