// Which processes a proton-ctl TARGET names: the control folder's sockets, /proc-like process
// descriptions and the name rule, on a temporary folder (no process is started).
#include "control/targets.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string_view>

namespace proton::control {
namespace {

// A command line as /proc/<pid>/cmdline holds it: each word ends in a NUL byte.
std::string cmdline(std::initializer_list<std::string_view> words) {
  std::string out;
  for (std::string_view w : words)
    (out += w) += '\0';
  return out;
}

class Targets : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("proton_targets_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    run_ = root_ / "run";
    proc_ = root_ / "proc";
    std::filesystem::create_directories(run_);
    std::filesystem::create_directories(proc_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // A socket file as a server leaves it (bound; nothing needs to listen for the listing).
  void make_socket(const std::string& file) {
    const std::string path = (run_ / file).string();
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
    ::close(fd);
  }
  // /proc/<pid>/comm and cmdline as the kernel writes them.
  void make_process(long pid, const std::string& comm, const std::string& cmdline) {
    auto dir = proc_ / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "comm") << comm << "\n";
    std::ofstream(dir / "cmdline", std::ios::binary) << cmdline;
  }
  std::filesystem::path root_;
  std::filesystem::path run_;
  std::filesystem::path proc_;
};

std::vector<long> pids(const std::vector<Peer>& peers) {
  std::vector<long> out;
  for (const Peer& p : peers)
    out.push_back(p.pid);
  return out;
}

TEST_F(Targets, ListsOnlyPidSockets) {
  make_socket("300.sock");
  make_socket("12.sock");
  make_socket("serve.sock");              // not a pid
  make_socket("0.sock");                  // no process has pid 0
  std::ofstream(run_ / "7.sock") << "x";  // a plain file, not a socket
  std::filesystem::create_directory(run_ / "8.sock");
  std::ofstream(run_ / "9.sock.tmp") << "x";
  std::vector<SocketEntry> found = list_sockets(run_.string());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].pid, 12);
  EXPECT_EQ(found[0].path, (run_ / "12.sock").string());
  EXPECT_EQ(found[1].pid, 300);
  EXPECT_TRUE(list_sockets((root_ / "missing").string()).empty());
}

TEST_F(Targets, ReadsCommAndCommandLine) {
  make_process(42, "python3", cmdline({"/usr/bin/python3", "-u", "train.py", "--lr"}));
  std::optional<ProcessInfo> p = read_process(proc_.string(), 42);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->argv, (std::vector<std::string>{"/usr/bin/python3", "-u", "train.py", "--lr"}));
  EXPECT_FALSE(read_process(proc_.string(), 43));  // no such process
  make_process(44, "kworker", "");                 // a zombie's cmdline is empty
  ASSERT_TRUE(read_process(proc_.string(), 44));
  EXPECT_TRUE(read_process(proc_.string(), 44)->argv.empty());
}

TEST(NameRule, CommWordsAndLastPathComponent) {
  ProcessInfo python{"python3", {"/usr/bin/python3", "/srv/app/train.py", "--name", "x"}};
  EXPECT_TRUE(name_matches("python3", python));   // comm
  EXPECT_TRUE(name_matches("train.py", python));  // a word's last component
  EXPECT_TRUE(name_matches("/srv/app/train.py", python));
  EXPECT_TRUE(name_matches("app/train.py", python));
  EXPECT_FALSE(name_matches("python", python));  // neither comm nor a whole component
  EXPECT_FALSE(name_matches("rain.py", python));
  EXPECT_FALSE(name_matches("", python));
  ProcessInfo plain{"python", {"python", "train.py"}};
  EXPECT_TRUE(name_matches("python", plain));
  EXPECT_TRUE(name_matches("train.py", plain));
  // comm is cut to 15 bytes: a longer name matches by its first 15.
  ProcessInfo longer{"inference_serve", {}};
  EXPECT_TRUE(name_matches("inference_server", longer));
  EXPECT_FALSE(name_matches("inference_serv", longer));
}

TEST_F(Targets, AllTakesEverySocketAndMarksStaleOnes) {
  make_socket("10.sock");
  make_socket("11.sock");
  make_socket("12.sock");
  make_process(10, "python", cmdline({"python", "train.py"}));
  make_process(12, "python", cmdline({"python", "serve.py"}));
  std::vector<Peer> all = select_peers("all", run_.string(), proc_.string());
  ASSERT_EQ(pids(all), (std::vector<long>{10, 11, 12}));
  EXPECT_TRUE(all[0].alive);
  EXPECT_FALSE(all[1].alive);  // process 11 has ended: its socket is stale
  EXPECT_TRUE(all[2].alive);
  EXPECT_EQ(all[1].socket, (run_ / "11.sock").string());
  EXPECT_EQ(pids(select_peers("train.py", run_.string(), proc_.string())), (std::vector<long>{10}));
  EXPECT_EQ(pids(select_peers("python", run_.string(), proc_.string())),
            (std::vector<long>{10, 12}));
  EXPECT_TRUE(select_peers("bash", run_.string(), proc_.string()).empty());
  // A process that runs train.py but has no socket is never a peer.
  make_process(13, "python", cmdline({"python", "train.py"}));
  EXPECT_EQ(pids(select_peers("train.py", run_.string(), proc_.string())), (std::vector<long>{10}));
}

TEST(StatusRank, FromTheReply) {
  EXPECT_EQ(rank_of_status("idle; 2 windows written; rank 3 of 8"), 3);
  EXPECT_EQ(rank_of_status("window open, to be written to /a; rank x/b.w0.hatchet; rank 0"), 0);
  EXPECT_FALSE(rank_of_status("idle; 2 windows written"));
  EXPECT_FALSE(rank_of_status("idle; rank -1"));
}

}  // namespace
}  // namespace proton::control
