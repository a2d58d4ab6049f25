#include "control/targets.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace proton::control {

namespace {

std::optional<long> leading_pid(std::string_view s) {
  long pid = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), pid);
  if (ec != std::errc() || ptr != s.data() + s.size() || pid <= 0) return std::nullopt;
  return pid;
}

bool read_file(const std::filesystem::path& path, std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

constexpr size_t kCommBytes = 15;  // the kernel's TASK_COMM_LEN less its terminator

}  // namespace

std::vector<SocketEntry> list_sockets(const std::string& dir) {
  std::vector<SocketEntry> found;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return found;
  for (const auto& entry : it) {
    const std::string file = entry.path().filename().string();
    constexpr std::string_view kSuffix = ".sock";
    if (file.size() <= kSuffix.size() || !file.ends_with(kSuffix)) continue;
    std::optional<long> pid =
        leading_pid(std::string_view(file).substr(0, file.size() - kSuffix.size()));
    if (!pid) continue;
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    found.push_back({*pid, entry.path().string()});
  }
  std::sort(found.begin(), found.end(),
            [](const SocketEntry& a, const SocketEntry& b) { return a.pid < b.pid; });
  return found;
}

std::optional<ProcessInfo> read_process(const std::string& proc_root, long pid) {
  const std::filesystem::path base = std::filesystem::path(proc_root) / std::to_string(pid);
  ProcessInfo info;
  if (!read_file(base / "comm", info.comm)) return std::nullopt;
  if (!info.comm.empty() && info.comm.back() == '\n') info.comm.pop_back();
  std::string cmdline;
  if (read_file(base / "cmdline", cmdline)) {  // empty for kernel threads and zombies
    size_t start = 0;
    while (start < cmdline.size()) {
      size_t end = cmdline.find('\0', start);
      if (end == std::string::npos) end = cmdline.size();
      if (end > start) info.argv.push_back(cmdline.substr(start, end - start));
      start = end + 1;
    }
  }
  return info;
}

bool name_matches(std::string_view name, const ProcessInfo& process) {
  if (name.empty()) return false;
  if (process.comm == name) return true;
  if (name.size() > kCommBytes && process.comm == name.substr(0, kCommBytes)) return true;
  for (const std::string& word : process.argv) {
    if (word == name) return true;
    if (word.size() > name.size() && word.ends_with(name) &&
        word[word.size() - name.size() - 1] == '/') {
      return true;
    }
  }
  return false;
}

std::vector<Peer> select_peers(std::string_view target, const std::string& dir,
                               const std::string& proc_root) {
  std::vector<Peer> peers;
  const bool all = target == "all";
  for (SocketEntry& s : list_sockets(dir)) {
    std::optional<ProcessInfo> process = read_process(proc_root, s.pid);
    if (all) {
      peers.push_back({s.pid, std::move(s.path), process.has_value()});
    } else if (process && name_matches(target, *process)) {
      peers.push_back({s.pid, std::move(s.path), true});
    }
  }
  return peers;
}

std::optional<int64_t> rank_of_status(std::string_view status) {
  constexpr std::string_view kRank = "; rank ";
  size_t at = status.rfind(kRank);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = status.substr(at + kRank.size());
  int64_t rank = 0;
  auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), rank);
  if (ec != std::errc() || rank < 0) return std::nullopt;
  return rank;
}

}  // namespace proton::control
