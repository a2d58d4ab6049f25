// Durations as people write them: "10s", "500ms", "2m", "1h" or plain milliseconds ("250"), from
// 1 ms to one day. One grammar for the control socket's `window MS`, proton-ctl, --flush-every,
// flush_every="..." and PROTON_FLUSH_EVERY. Header only: the control protocol's fuzzer builds
// with it and nothing else.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace proton {

inline constexpr uint64_t kMaxDurationMs = 24ull * 3600 * 1000;

/// The duration in milliseconds, or nullopt for text outside the grammar or the range.
inline std::optional<uint64_t> parse_duration_ms(std::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr == text.data()) return std::nullopt;
  std::string_view unit(ptr, static_cast<size_t>(end - ptr));
  uint64_t scale = 0;
  if (unit.empty() || unit == "ms") {
    scale = 1;
  } else if (unit == "s") {
    scale = 1000;
  } else if (unit == "m") {
    scale = 60'000;
  } else if (unit == "h") {
    scale = 3'600'000;
  } else {
    return std::nullopt;
  }
  if (value == 0 || value > kMaxDurationMs / scale) return std::nullopt;
  return value * scale;
}

}  // namespace proton
