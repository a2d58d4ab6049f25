// The control socket's client (proton-ctl): one request, one reply.
#pragma once

#include <string>

namespace proton::control {

/// How a request went.
enum class Outcome {
  kAnswered,  // `text` is the reply line ("ok ..." / "error ...")
  kEnded,     // nothing listens at the socket: its process has ended
  kNoAnswer,  // connected, but no whole reply line within the time limit
  kFailed,    // anything else; `text` says what
};

struct Reply {
  Outcome outcome = Outcome::kFailed;
  std::string text;  // the reply line, or one line saying what went wrong
};

/// Sends `line` to the socket at `path` and waits at most `timeout_ms` for the reply line.
Reply ask(const std::string& path, const std::string& line, int timeout_ms);

/// Sends `line` to the socket at `path` and returns the reply line ("ok ..." / "error ...").
/// Returns "" and sets `error` (one line) when the process cannot be reached or does not
/// answer within a minute (writing a window may take a while: the GPU's records are flushed).
std::string send_request(const std::string& path, const std::string& line, std::string& error);

}  // namespace proton::control
