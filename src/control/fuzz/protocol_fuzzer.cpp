// The control socket's request decoder: any bytes a peer sends. A request it accepts must read
// back the same through format_request (the client's encoding), and never crash or hang.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "control/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  proton::control::Parsed p = proton::control::parse_request(line);
  if (p.request.has_value() == !p.error.empty()) std::abort();  // exactly one of them
  if (p.request) {
    proton::control::Parsed again =
        proton::control::parse_request(proton::control::format_request(*p.request));
    if (!again.request || again.request->command != p.request->command ||
        again.request->name != p.request->name ||
        again.request->duration_ms != p.request->duration_ms) {
      std::abort();
    }
  }
  (void)proton::control::parse_duration_ms(line);
  return 0;
}
