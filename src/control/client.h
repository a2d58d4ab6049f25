// The control socket's client (proton-ctl): one request, one reply.
#pragma once

#include <string>

namespace proton::control {

/// Sends `line` to the socket at `path` and returns the reply line ("ok ..." / "error ...").
/// Returns "" and sets `error` (one line) when the process cannot be reached.
std::string send_request(const std::string& path, const std::string& line, std::string& error);

}  // namespace proton::control
