#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace proton {

namespace {
std::string os_error(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}
}  // namespace

void write_file_atomically(const std::string& path, std::string_view data) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(os_error("cannot write profile", path));
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string msg = os_error("cannot write profile", path);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(msg);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = os_error("cannot write profile", path);
    ::unlink(tmp.c_str());
    throw std::runtime_error(msg);
  }
}

std::string check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "directory '" + dir.string() + "' does not exist";
  if (::access(dir.c_str(), W_OK) != 0) {
    return "directory '" + dir.string() + "' is not writable: " + std::strerror(errno);
  }
  if (fs::is_directory(path, ec)) return "'" + path + "' is a directory";
  return {};
}

}  // namespace proton
