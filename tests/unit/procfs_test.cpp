#include "common/procfs.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/subprocess.h"
#include "common/unique_fd.h"

namespace dormant::procfs {
namespace {

TEST(Procfs, OpenFdsSeeANewDescriptor) {
  size_t before = open_fds().value().size();
  UniqueFd extra(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  auto fds = open_fds().value();
  EXPECT_EQ(fds.size(), before + 1);
  bool found = false;
  for (const OpenFd& fd : fds) found |= fd.fd == extra.get() && fd.target == "/dev/null";
  EXPECT_TRUE(found);
}

TEST(Procfs, ThreadCountFollowsThreads) {
  int before = thread_count().value();
  std::mutex mutex;
  mutex.lock();
  std::thread waiting([&] { std::lock_guard lock(mutex); });
  EXPECT_EQ(thread_count().value(), before + 1);
  mutex.unlock();
  waiting.join();
  EXPECT_EQ(thread_count().value(), before);
}

TEST(Procfs, MemoryUsageIsPlausible) {
  MemoryUsage usage = memory_usage().value();
  EXPECT_GT(usage.rss_kb, 0u);
  EXPECT_GT(usage.rss_anon_kb, 0u);
  EXPECT_LE(usage.rss_anon_kb, usage.rss_kb);
  EXPECT_GE(usage.peak_rss_kb, usage.rss_kb);
}

TEST(Procfs, ChildrenListsASpawnedChild) {
  SpawnOptions options;
  options.argv = {CHILD_HELPER, "sleep"};
  auto child = Subprocess::spawn(options);
  ASSERT_TRUE(child.ok());
  auto kids = children().value();
  EXPECT_NE(std::find(kids.begin(), kids.end(), (*child)->pid()), kids.end());
  auto usage = resource_usage().value();
  EXPECT_EQ(usage.children, kids);
}

// Children are listed per thread by the kernel: one spawned by a thread that has ended since
// must still be found, and so must one that has exited and is not reaped yet.
TEST(Procfs, ChildrenOfEndedThreadsAndZombiesAreListed) {
  std::unique_ptr<Subprocess> from_thread;
  std::thread spawner([&] {
    SpawnOptions options;
    options.argv = {CHILD_HELPER, "sleep"};
    auto child = Subprocess::spawn(options);
    ASSERT_TRUE(child.ok());
    from_thread = std::move(*child);
  });
  spawner.join();
  ASSERT_TRUE(from_thread);
  pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  ASSERT_GT(zombie, 0);
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(zombie), &info, WEXITED | WNOWAIT);  // exited, not reaped
  auto kids = children().value();
  EXPECT_NE(std::find(kids.begin(), kids.end(), from_thread->pid()), kids.end());
  EXPECT_NE(std::find(kids.begin(), kids.end(), zombie), kids.end());
  ::waitpid(zombie, nullptr, 0);
}

TEST(Procfs, StatOfThisProcess) {
  auto self = process_stat(::getpid());
  ASSERT_TRUE(self.ok()) << self.error().message();
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_EQ(self->pgid, ::getpgrp());
  EXPECT_EQ(self->state, 'R');
  EXPECT_FALSE(process_stat(0x3fffffff).ok());
}

TEST(Procfs, StatParsesCommWithSpacesAndParentheses) {
  // comm is the name of the executable, so run the helper through a link with an awkward name.
  std::filesystem::path link =
      std::filesystem::temp_directory_path() / ("a) (b " + std::to_string(::getpid()));
  std::filesystem::create_symlink(CHILD_HELPER, link);
  SpawnOptions options;
  options.argv = {link.string(), "sleep"};
  auto child = Subprocess::spawn(options);
  std::filesystem::remove(link);
  ASSERT_TRUE(child.ok()) << child.error().message();
  ASSERT_TRUE((*child)->next_stdout_line(deadline_after(std::chrono::seconds(10))).ok());
  auto stat = process_stat((*child)->pid());
  ASSERT_TRUE(stat.ok()) << stat.error().message();
  EXPECT_EQ(stat->comm, link.filename().string().substr(0, 15));
  EXPECT_EQ(stat->ppid, ::getpid());
  EXPECT_EQ(stat->pgid, (*child)->pid());
}

}  // namespace
}  // namespace dormant::procfs
