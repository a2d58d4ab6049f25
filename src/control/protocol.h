// The control socket's protocol: one request line, one reply line, in plain text.
//
//   start [NAME]          open a window (written to NAME.w<k>, default: the configured name)
//   stop                  write the open window
//   window MS [NAME]      open a window that closes by itself after MS milliseconds
//   status                say whether a window is open, and where it goes (one rank of a
//                         job adds "; rank R of N")
//
// A reply is "ok TEXT" or "error TEXT". A line is at most kMaxLine bytes and holds no control
// characters; NAME is the rest of the line (paths may hold spaces).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "options/duration.h"

namespace proton::control {

inline constexpr size_t kMaxLine = 4096;

enum class Command : uint8_t { kStart, kStop, kWindow, kStatus };

struct Request {
  Command command = Command::kStatus;
  std::string name;          // "" = the configured name
  uint64_t duration_ms = 0;  // kWindow only
};

/// A request or one line saying what is wrong with it (never both).
struct Parsed {
  std::optional<Request> request;
  std::string error;
};

/// Decodes one request line (without its newline). Never throws; any bytes are accepted input.
Parsed parse_request(std::string_view line);
/// The line a client sends for `request` (without the newline); parse_request reads it back.
std::string format_request(const Request& request);

/// "10s", "500ms", "2m", "1h" or plain milliseconds ("250"), from 1 ms to one day.
using ::proton::parse_duration_ms;

/// Replies: "ok TEXT" / "error TEXT", one line (newlines in TEXT become spaces).
std::string ok_reply(std::string_view text);
std::string error_reply(std::string_view text);

}  // namespace proton::control
