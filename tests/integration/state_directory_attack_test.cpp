// Issue 22, agent 6: the agent's state directory (journal, spool, perf's work files) attacked
// the ways a local user could: a symbolic link in its place, a directory of another user or one
// its group may write, and the work files an agent killed with SIGKILL leaves behind.
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "tests/support/eventually.h"
#include "workload.h"

#include "common/subprocess.h"

namespace dormant {
namespace {

namespace fs = std::filesystem;
using dormant::testing::eventually;
using dormant::testing::spawn_workload;

class StateDirectoryAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("dormant-state-attack-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "out");
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  std::vector<std::string> agent_args(const fs::path& state, const std::string& seconds) {
    return {DORMANT_AGENT, "--system-profiler",      "perf",        "-d",          seconds,
            "-o",          (root_ / "out").string(), "--state-dir", state.string()};
  }

  // The agent, refusing `state`: it exits 1 and says why, and writes nothing there.
  void expect_refused(const fs::path& state, const std::string& why) {
    auto agent = run_command(agent_args(state, "1"), deadline_after(std::chrono::seconds(60)));
    ASSERT_TRUE(agent.ok()) << agent.error().message();
    EXPECT_EQ(agent->status.code, 1) << agent->stderr_text;
    EXPECT_NE(agent->stderr_text.find("--state-dir: " + state.string() + why), std::string::npos)
        << agent->stderr_text;
    EXPECT_FALSE(fs::exists(state / "work")) << "the agent wrote in a directory it refused";
  }

  fs::path root_;
};

TEST_F(StateDirectoryAttackTest, ASymbolicLinkInItsPlaceIsRefused) {
  fs::create_directories(root_ / "elsewhere");
  fs::permissions(root_ / "elsewhere", fs::perms::owner_all);
  fs::create_symlink(root_ / "elsewhere", root_ / "state");
  expect_refused(root_ / "state", " is a symbolic link: give the directory itself");
  EXPECT_TRUE(fs::is_empty(root_ / "elsewhere"));
}

TEST_F(StateDirectoryAttackTest, ADirectoryItsGroupMayWriteIsRefused) {
  fs::create_directories(root_ / "state");
  fs::permissions(root_ / "state", fs::perms::owner_all | fs::perms::group_all);
  expect_refused(root_ / "state", " may be written by its group or by others (chmod go-w)");
}

TEST_F(StateDirectoryAttackTest, AnotherUsersDirectoryIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  fs::create_directories(root_ / "state");
  fs::permissions(root_ / "state", fs::perms::owner_all);
  ASSERT_EQ(::chown((root_ / "state").c_str(), 65534, 65534), 0);
  expect_refused(root_ / "state", " belongs to uid 65534, not to this agent's (0)");
}

TEST_F(StateDirectoryAttackTest, ItIsMade0700AndPerfWorksInIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: perf -a";
  auto agent = run_command(agent_args(root_ / "new" / "state", "1"),
                           deadline_after(std::chrono::seconds(120)));
  ASSERT_TRUE(agent.ok()) << agent.error().message();
  EXPECT_EQ(agent->status.code, 0) << agent->stderr_text;
  for (const fs::path& made :
       {root_ / "new", root_ / "new" / "state", root_ / "new" / "state" / "work"}) {
    EXPECT_EQ(fs::status(made).permissions(), fs::perms::owner_all) << made;
  }
  EXPECT_TRUE(fs::is_empty(root_ / "new" / "state" / "work")) << "perf's work files stayed";
}

// perf's files of an agent killed with SIGKILL stay in <state dir>/work (no longer in /tmp), and
// the next agent to start removes them.
TEST_F(StateDirectoryAttackTest, WorkFilesOfAnAgentKilledWithSigkillAreRemovedAtTheNextStart) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: perf -a";
  if (!run_command({"perf", "--version"}, deadline_after(std::chrono::seconds(10))).ok()) {
    GTEST_SKIP() << "perf is not installed";
  }
  const fs::path state = root_ / "state";
  const fs::path work = state / "work";
  auto workload = spawn_workload(60);
  ASSERT_NE(workload, nullptr);
  SpawnOptions options;
  options.argv = agent_args(state, "60");
  options.stdout_to = Redirect::null();
  options.stderr_to = Redirect::file(root_ / "killed.log");
  auto killed = Subprocess::spawn(options);
  ASSERT_TRUE(killed.ok()) << killed.error().message();
  fs::path leftover;
  ASSERT_TRUE(eventually(
      [&] {
        std::error_code error;
        for (const auto& entry : fs::directory_iterator(work, error)) {
          for (const auto& file : fs::directory_iterator(entry.path(), error)) {
            if (fs::file_size(file.path(), error) > 0) leftover = entry.path();
          }
        }
        return !leftover.empty();
      },
      std::chrono::seconds(60)))
      << "perf never wrote in " << work;
  EXPECT_EQ(leftover.filename().string().rfind("perf-" + std::to_string((*killed)->pid()) + "-", 0),
            0u)
      << leftover;
  ::kill((*killed)->pid(), SIGKILL);
  ASSERT_TRUE((*killed)->wait(deadline_after(std::chrono::seconds(30))).ok());
  ASSERT_TRUE(fs::exists(leftover)) << "nothing was left behind to remove";

  auto next = run_command(agent_args(state, "1"), deadline_after(std::chrono::seconds(120)));
  ASSERT_TRUE(next.ok()) << next.error().message();
  EXPECT_EQ(next->status.code, 0) << next->stderr_text;
  EXPECT_FALSE(fs::exists(leftover)) << next->stderr_text;
  EXPECT_NE(next->stderr_text.find("removed 1 work files that an agent killed earlier left in " +
                                   work.string()),
            std::string::npos)
      << next->stderr_text;
  EXPECT_TRUE(fs::is_empty(work));
}

}  // namespace
}  // namespace dormant
