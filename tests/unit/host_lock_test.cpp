#include "agent/host_lock.h"

#include <filesystem>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dormant::agent {
namespace {

namespace fs = std::filesystem;

class HostLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dormant-lock-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(HostLockTest, OneHolderAtATimeAndTheLockGoesWithIt) {
  const std::string path = (root_ / "run" / "agent.lock").string();
  {
    auto first = HostLock::acquire(path);
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_EQ(fs::status(root_ / "run").permissions() & fs::perms::all, fs::perms::owner_all);
    auto second = HostLock::acquire(path);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().kind(), ErrorKind::kUnavailable);
    EXPECT_NE(second.error().message().find("another dormant-agent runs on this host"),
              std::string::npos);
  }
  EXPECT_TRUE(HostLock::acquire(path).ok()) << "released with its holder";
}

// Issue 22, agent 7: any user could bind the abstract socket name first and keep every agent
// from starting. The lock's directory is the agent's alone, so another user cannot create it.
TEST_F(HostLockTest, AnotherUserCannotTakeTheLockFirst) {
  if (::geteuid() != 0) GTEST_SKIP() << "acting as another user needs root";
  const fs::path path = root_ / "run" / "agent.lock";
  { ASSERT_TRUE(HostLock::acquire(path.string()).ok()); }  // makes the directory, 0700
  fs::permissions(root_, fs::perms::owner_all | fs::perms::others_exec);
  pid_t squatter = ::fork();
  if (squatter == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
    ::_exit(fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(squatter, &status, 0), squatter);
  EXPECT_EQ(WEXITSTATUS(status), 1) << "an unprivileged user opened and locked the host lock";
  EXPECT_TRUE(HostLock::acquire(path.string()).ok());

  // A lock directory another user owns is not trusted.
  const fs::path theirs = root_ / "theirs";
  fs::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  auto refused = HostLock::acquire((theirs / "agent.lock").string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("belongs to uid 65534"), std::string::npos);
}

TEST(HostLockPath, SystemdsRuntimeDirectoryComesFirst) {
  ::setenv("RUNTIME_DIRECTORY", "/run/dormant-x:/run/other", 1);
  EXPECT_EQ(HostLock::default_path(), "/run/dormant-x/agent.lock");
  ::unsetenv("RUNTIME_DIRECTORY");
  EXPECT_EQ(HostLock::default_path(), "/run/dormant/agent.lock");
}

}  // namespace
}  // namespace dormant::agent
