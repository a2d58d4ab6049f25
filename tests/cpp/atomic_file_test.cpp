// write_file_atomically: the file at `path` is always a whole profile, the old one or the new.
#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace proton {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("proton_atomic_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir_);
  }
  size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesAndReplacesWholeFilesLeavingNoTemporary) {
  fs::path p = dir_ / "a.hatchet";
  write_file_atomically(p.string(), "first");
  EXPECT_EQ(slurp(p), "first");
  std::string big(1 << 20, 'x');
  write_file_atomically(p.string(), big);
  EXPECT_EQ(slurp(p), big);
  write_file_atomically(p.string(), "");
  EXPECT_EQ(slurp(p), "");
  EXPECT_EQ(entries(), 1u);  // no temporary left beside it
}

// Failures made so that they happen for root too (CI runs as root, which ignores permissions).

TEST_F(AtomicFileTest, FailureToCreateTheTemporaryKeepsThePreviousFileAndNamesThePath) {
  fs::path p = dir_ / "keep.hatchet";
  write_file_atomically(p.string(), "old");
  // A directory where the temporary file goes: open() fails (EISDIR) for any user.
  fs::path blocker = p.string() + ".tmp." + std::to_string(::getpid());
  fs::create_directory(blocker);
  try {
    write_file_atomically(p.string(), "new");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(p), "old");
  EXPECT_TRUE(fs::is_directory(blocker));
  EXPECT_EQ(entries(), 2u);  // the old file and the blocker, nothing else
}

// A file size limit makes write() fail part-way (EFBIG), for root too: the partial temporary
// is removed and the old file, larger than the limit, is untouched.
TEST_F(AtomicFileTest, FailureInTheMiddleOfTheWriteKeepsThePreviousFile) {
  fs::path p = dir_ / "keep.hatchet";
  std::string old(64 * 1024, 'o');
  write_file_atomically(p.string(), old);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  auto* previous = std::signal(SIGXFSZ, SIG_IGN);  // else the process is killed
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    write_file_atomically(p.string(), std::string(1 << 20, 'n'));
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  ASSERT_FALSE(error.empty()) << "expected an error";
  EXPECT_NE(error.find(p.string()), std::string::npos) << error;
  EXPECT_EQ(slurp(p), old);
  EXPECT_EQ(entries(), 1u);  // the partial temporary was removed
}

TEST_F(AtomicFileTest, APathThroughARegularFileIsAnErrorForRootToo) {
  fs::path file = dir_ / "plain";
  write_file_atomically(file.string(), "kept");
  fs::path p = file / "x.hatchet";  // ENOTDIR, whoever runs it
  EXPECT_THROW(write_file_atomically(p.string(), "x"), std::runtime_error);
  EXPECT_FALSE(check_writable(p.string()).empty());
  EXPECT_EQ(slurp(file), "kept");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, UnwritableDirectoryKeepsThePreviousFile) {
  fs::path p = dir_ / "keep.hatchet";
  write_file_atomically(p.string(), "old");
  // Root ignores directory permissions: the tests above fail for root instead.
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::remove);
  EXPECT_THROW(write_file_atomically(p.string(), "new"), std::runtime_error);
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
  EXPECT_EQ(slurp(p), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFileTest, MissingDirectoryIsAnErrorNotACrash) {
  fs::path p = dir_ / "no" / "such" / "x.hatchet";
  EXPECT_THROW(write_file_atomically(p.string(), "x"), std::runtime_error);
  EXPECT_FALSE(check_writable(p.string()).empty());
  EXPECT_TRUE(check_writable((dir_ / "ok.hatchet").string()).empty());
}

TEST_F(AtomicFileTest, ADirectoryInTheWayIsRefusedAndKept) {
  fs::path p = dir_ / "taken";
  fs::create_directories(p / "inner");
  EXPECT_THROW(write_file_atomically(p.string(), "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_directory(p / "inner"));
  EXPECT_EQ(entries(), 1u);  // the temporary was removed
}

}  // namespace
}  // namespace proton
