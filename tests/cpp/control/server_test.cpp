// The control socket end to end, in this process: the folder's and socket's modes, requests over
// the socket, a foreign uid, dead peers, a timed window, the toggle signal and proton-ctl.
#include "control/server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "control/client.h"
#include "control/control_dir.h"
#include "control/ctl.h"
#include "control/windows.h"
#include "io/run_info.h"
#include "runtime_fixture.h"

namespace proton::control {
namespace {

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Waits (at most 20 s) until `done` holds; the tests assert on effects, never on time.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 2000 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

class ControlSocket : public testing::RuntimeFixture {
 protected:
  ControlSocket() : RuntimeFixture("proton_ctl_", 8'000'000) {}
  void SetUp() override {
    RuntimeFixture::SetUp();
    WindowController::get().reset_for_testing();
    WindowController::get().configure(config("serve"));
    sock_dir_ = dir_ / "run";
    path_ = server_.start(sock_dir_.string(), SIGUSR2);
  }
  void TearDown() override {
    server_.stop();
    WindowController::get().reset_for_testing();
    RuntimeFixture::TearDown();
  }
  std::string ask(const std::string& line) {
    std::string error;
    std::string reply = send_request(path_, line, error);
    EXPECT_EQ(error, "");
    return reply;
  }
  ControlServer& server_ = ControlServer::get();
  std::filesystem::path sock_dir_;
  std::string path_;
};

TEST_F(ControlSocket, PrivateFolderAndSocket) {
  EXPECT_EQ(path_, (sock_dir_ / (std::to_string(::getpid()) + ".sock")).string());
  EXPECT_EQ(mode_of(sock_dir_), 0700u);
  EXPECT_EQ(mode_of(path_), 0600u);
  struct stat st {};
  ASSERT_EQ(::lstat(path_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  server_.stop();
  EXPECT_FALSE(std::filesystem::exists(path_));  // removed when serving ends
}

TEST_F(ControlSocket, AFolderOthersCanEnterIsRefused) {
  auto open_dir = dir_ / "open";
  std::filesystem::create_directory(open_dir);
  ::chmod(open_dir.c_str(), 0755);
  std::string why = ensure_private_dir(open_dir.string(), ::geteuid());
  EXPECT_NE(why.find("mode 0755"), std::string::npos) << why;
  EXPECT_NE(ensure_private_dir(open_dir.string(), ::geteuid() + 1), "");  // someone else's
  auto file = dir_ / "file";
  std::ofstream(file) << "x";
  EXPECT_NE(ensure_private_dir(file.string(), ::geteuid()).find("not a folder"), std::string::npos);
  server_.stop();
  EXPECT_THROW(server_.start(open_dir.string(), 0), std::runtime_error);
}

TEST_F(ControlSocket, StartAndStopWriteUniqueWindows) {
  for (int k = 0; k < 3; ++k) {
    std::string opened = ask("start");
    EXPECT_EQ(opened, "ok " + (dir_ / ("serve.w" + std::to_string(k) + ".hatchet")).string());
    launch("kernel" + std::to_string(k), 10);
    EXPECT_EQ(ask("stop"), opened);
  }
  for (int k = 0; k < 3; ++k) {
    auto root = read("serve.w" + std::to_string(k))[0];
    EXPECT_NE(child(root, "kernel" + std::to_string(k)), nullptr);
    EXPECT_EQ(child(root, "kernel" + std::to_string((k + 1) % 3)), nullptr);
  }
  EXPECT_EQ(ask("stop"), "error no window is open");
  EXPECT_EQ(ask("start " + (dir_ / "named").string()),
            "ok " + (dir_ / "named.w3.hatchet").string());
  EXPECT_EQ(ask("start").rfind("error a window is already open", 0), 0u);
  ask("stop");
}

TEST_F(ControlSocket, StatusSaysAnOpenWindowIsFlushed) {
  WindowController::get().configure(config("serve"), /*flush_ms=*/60'000);
  const std::string path = (dir_ / "serve.w0.hatchet").string();
  EXPECT_EQ(ask("start"), "ok " + path);
  EXPECT_EQ(ask("status"),
            "ok window open, to be written to " + path + " (flushed every 60000 ms)");
  EXPECT_EQ(ask("stop"), "ok " + path);
  EXPECT_EQ(ask("status"), "ok idle; 1 windows written");
}

TEST_F(ControlSocket, UnknownCommandGetsOneLine) {
  EXPECT_EQ(ask("reboot"),
            "error unknown command 'reboot' (expected start, stop, window or status)");
  EXPECT_FALSE(rt_.has_sessions());
}

TEST_F(ControlSocket, ForeignUserIsRefused) {
  ::testing::internal::CaptureStderr();
  std::string reply = server_.answer("start", ::geteuid() + 1);
  std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(reply.rfind("error refused", 0), 0u);
  EXPECT_NE(logged.find("refused a control request from uid " + std::to_string(::geteuid() + 1)),
            std::string::npos);
  EXPECT_FALSE(rt_.has_sessions());
  EXPECT_FALSE(WindowController::get().is_open());
}

TEST_F(ControlSocket, DeadPeersLeaveTheServerServing) {
  auto connect_raw = [&] {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    return fd;
  };
  ::close(connect_raw());  // says nothing
  int half = connect_raw();
  ASSERT_EQ(::send(half, "sta", 3, MSG_NOSIGNAL), 3);  // dies mid-request
  ::close(half);
  int gone = connect_raw();  // asks, then leaves before the answer
  ASSERT_EQ(::send(gone, "status\n", 7, MSG_NOSIGNAL), 7);
  ::close(gone);
  EXPECT_EQ(ask("status").rfind("ok idle", 0), 0u);
  EXPECT_FALSE(rt_.has_sessions());  // the half request opened nothing
}

TEST_F(ControlSocket, TimedWindowClosesItself) {
  std::string reply = ask("window 50ms");
  EXPECT_EQ(reply, "ok " + (dir_ / "serve.w0.hatchet").string());
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(dir_ / "serve.w0.hatchet"); }));
  EXPECT_TRUE(eventually([&] { return !WindowController::get().is_open(); }));
  EXPECT_EQ(ask("status").rfind("ok idle; 1 windows written", 0), 0u);
}

TEST_F(ControlSocket, ToggleSignalOpensAndCloses) {
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_TRUE(eventually([] { return WindowController::get().is_open(); }));
  launch("toggled", 10);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_TRUE(eventually([&] { return std::filesystem::exists(dir_ / "serve.w0.hatchet"); }));
  EXPECT_NE(child(read("serve.w0")[0], "toggled"), nullptr);
}

TEST_F(ControlSocket, ProtonCtlPrintsWhere) {
  ::setenv("PROTON_CONTROL_DIR", sock_dir_.c_str(), 1);
  const std::string pid = std::to_string(::getpid());
  std::ostringstream out, err;
  EXPECT_EQ(run_ctl({"start", pid}, out, err), 0) << err.str();
  EXPECT_NE(out.str().find((dir_ / "serve.w0.hatchet").string()), std::string::npos);
  out.str("");
  EXPECT_EQ(run_ctl({"stop", pid}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(), "wrote " + (dir_ / "serve.w0.hatchet").string() + "\n");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "serve.w0.hatchet"));
  err.str("");
  EXPECT_EQ(run_ctl({"stop", pid}, out, err), 1);
  EXPECT_EQ(err.str(), "proton-ctl: process " + pid + ": no window is open\n");
  err.str("");
  EXPECT_EQ(run_ctl({"start", "no-such-program"}, out, err), 1);
  EXPECT_NE(err.str().find("no process named 'no-such-program' has a control socket"),
            std::string::npos)
      << err.str();
  EXPECT_FALSE(WindowController::get().is_open());
  err.str("");
  EXPECT_EQ(run_ctl({"window", pid}, out, err), 2);
  EXPECT_NE(err.str().find("needs --duration"), std::string::npos);
  err.str("");
  EXPECT_EQ(run_ctl({"status", "999999999"}, out, err), 1);
  EXPECT_NE(err.str().find("has no control socket"), std::string::npos);
  ::unsetenv("PROTON_CONTROL_DIR");
}

// A socket at <dir>/<pid>.sock: bound only (a stale socket whose process ended) or listening
// but never accepting (a process that does not answer).
int fake_socket(const std::filesystem::path& dir, long pid, bool listening) {
  const std::string path = (dir / (std::to_string(pid) + ".sock")).string();
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  if (listening) {
    EXPECT_EQ(::listen(fd, 4), 0);
  }
  return fd;
}

TEST_F(ControlSocket, ProtonCtlByNameAndAllWithRanks) {
  ::setenv("PROTON_CONTROL_DIR", sock_dir_.c_str(), 1);
  set_run_info(RunInfo{2, 4, 2, "node0", "", "torchrun"});
  const std::string me = "process " + std::to_string(::getpid()) + " (rank 2): ";
  // This test binary by the last component of its argv[0].
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").filename().string();
  std::ostringstream out, err;
  EXPECT_EQ(run_ctl({"start", exe}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(),
            me + "window opened, to be written to " + (dir_ / "serve.w0.hatchet").string() + "\n");
  EXPECT_TRUE(WindowController::get().is_open());
  out.str("");
  EXPECT_EQ(run_ctl({"status", "all"}, out, err), 0) << err.str();
  EXPECT_EQ(out.str(),
            me + "window open, to be written to " + (dir_ / "serve.w0.hatchet").string() + "\n");
  // A stale socket (pids never reach 999999999): the others still get the command; it is
  // reported, removed, and fails the command (a process that had a socket did not get it).
  int stale = fake_socket(sock_dir_, 999999999, false);
  ::close(stale);
  out.str("");
  EXPECT_EQ(run_ctl({"stop", "all"}, out, err), 1) << err.str();
  EXPECT_EQ(out.str(), me + "wrote " + (dir_ / "serve.w0.hatchet").string() + "\n");
  EXPECT_TRUE(std::filesystem::exists(dir_ / "serve.w0.hatchet"));
  EXPECT_NE(err.str().find("stale socket " + (sock_dir_ / "999999999.sock").string() +
                           ": process 999999999 has ended (socket removed)"),
            std::string::npos)
      << err.str();
  EXPECT_FALSE(std::filesystem::exists(sock_dir_ / "999999999.sock"));
  err.str("");
  // A living process whose socket never answers: reported, the others still done, exit 1.
  const long parent = static_cast<long>(::getppid());
  int mute = fake_socket(sock_dir_, parent, true);
  out.str("");
  err.str("");
  EXPECT_EQ(run_ctl({"status", "--timeout", "200ms", "all"}, out, err), 1);
  EXPECT_EQ(out.str(), me + "idle; 1 windows written\n");
  EXPECT_NE(err.str().find("process " + std::to_string(parent) + ": no answer within 200 ms"),
            std::string::npos)
      << err.str();
  // --name for several processes: each rank writes its own file.
  out.str("");
  EXPECT_EQ(run_ctl({"start", "--name", (dir_ / "job").string(), "-t", "200ms", "all"}, out, err),
            1);
  EXPECT_EQ(out.str(), me + "window opened, to be written to " +
                           (dir_ / "job.rank2.w1.hatchet").string() + "\n");
  EXPECT_EQ(run_ctl({"stop", exe}, out, err), 0) << err.str();
  EXPECT_TRUE(std::filesystem::exists(dir_ / "job.rank2.w1.hatchet"));
  // A refusal from one process fails the command too.
  err.str("");
  EXPECT_EQ(run_ctl({"stop", "--timeout", "200ms", exe}, out, err), 1);
  EXPECT_NE(err.str().find(me + "no window is open"), std::string::npos) << err.str();
  ::close(mute);
  set_run_info(RunInfo{});
  ::unsetenv("PROTON_CONTROL_DIR");
}

TEST_F(ControlSocket, AStaleSocketByPidIsRemoved) {
  ::setenv("PROTON_CONTROL_DIR", sock_dir_.c_str(), 1);
  ::close(fake_socket(sock_dir_, 999999998, false));
  std::ostringstream out, err;
  EXPECT_EQ(run_ctl({"status", "999999998"}, out, err), 1);
  EXPECT_EQ(err.str(), "proton-ctl: stale socket " + (sock_dir_ / "999999998.sock").string() +
                           ": process 999999998 has ended (socket removed)\n");
  EXPECT_FALSE(std::filesystem::exists(sock_dir_ / "999999998.sock"));
  ::unsetenv("PROTON_CONTROL_DIR");
}

TEST_F(ControlSocket, AFullBacklogCostsAtMostTheTimeLimit) {
  // A process that accepts nothing (stopped, stuck): once its backlog is full, a blocking
  // connect() would wait for ever. Fill it, then ask.
  const long parent = static_cast<long>(::getppid());
  const std::string path = (sock_dir_ / (std::to_string(parent) + ".sock")).string();
  int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  std::vector<int> queued;
  for (int i = 0; i < 64; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      break;  // EAGAIN: the backlog is full
    }
    queued.push_back(fd);
  }
  Reply r = control::ask(path, "status", 100);
  EXPECT_EQ(r.outcome, Outcome::kNoAnswer) << r.text;
  EXPECT_NE(r.text.find("no answer within 100 ms"), std::string::npos) << r.text;
  for (int fd : queued)
    ::close(fd);
  ::close(listener);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace proton::control
