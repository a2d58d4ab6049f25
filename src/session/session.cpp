#include "session/session.h"

namespace proton {

std::string Session::output_path(std::string_view format) const {
  std::string ext = format == "hatchet_msgpack" ? ".hatchet.msgpack"
                    : format == "chrome_trace"  ? ".chrome_trace"
                                                : ".hatchet";
  const std::string& name = config_.name;
  if (name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
    return name;
  }
  return name + ext;
}

}  // namespace proton
