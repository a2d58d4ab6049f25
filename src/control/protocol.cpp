#include "control/protocol.h"

#include <charconv>

namespace proton::control {

namespace {

bool printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

// The first word and the rest after one space ("" when none).
std::pair<std::string_view, std::string_view> split_word(std::string_view s) {
  size_t space = s.find(' ');
  if (space == std::string_view::npos) return {s, {}};
  return {s.substr(0, space), s.substr(space + 1)};
}

Parsed fail(std::string why) {
  return {std::nullopt, std::move(why)};
}

std::string one_line(std::string_view text) {
  std::string out(text.substr(0, kMaxLine - 8));
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

}  // namespace

Parsed parse_request(std::string_view line) {
  if (line.size() > kMaxLine) return fail("request longer than 4096 bytes");
  if (!printable(line)) return fail("request holds a control character");
  auto [word, rest] = split_word(line);
  Request r;
  if (word == "start") {
    r.command = Command::kStart;
    r.name = std::string(rest);
  } else if (word == "stop" || word == "status") {
    if (!rest.empty()) return fail("'" + std::string(word) + "' takes no argument");
    r.command = word == "stop" ? Command::kStop : Command::kStatus;
  } else if (word == "window") {
    auto [ms, name] = split_word(rest);
    std::optional<uint64_t> duration = parse_duration_ms(ms);
    if (!duration) return fail("'window' needs a duration from 1ms to 24h, e.g. 'window 10s'");
    r.command = Command::kWindow;
    r.duration_ms = *duration;
    r.name = std::string(name);
  } else {
    return fail("unknown command '" + one_line(word.substr(0, 64)) +
                "' (expected start, stop, window or status)");
  }
  if (r.name.find_first_not_of(' ') == std::string::npos && !r.name.empty()) {
    return fail("the window name is blank");
  }
  return {std::move(r), {}};
}

std::string format_request(const Request& r) {
  switch (r.command) {
    case Command::kStart:
      return r.name.empty() ? "start" : "start " + r.name;
    case Command::kStop:
      return "stop";
    case Command::kStatus:
      return "status";
    case Command::kWindow: {
      std::string line = "window " + std::to_string(r.duration_ms) + "ms";
      return r.name.empty() ? line : line + " " + r.name;
    }
  }
  return "status";
}

std::string ok_reply(std::string_view text) {
  return "ok " + one_line(text);
}
std::string error_reply(std::string_view text) {
  return "error " + one_line(text);
}

}  // namespace proton::control
