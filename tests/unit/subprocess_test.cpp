#include "common/subprocess.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/procfs.h"
#include "common/unique_fd.h"

namespace dormant {
namespace {

using std::chrono::milliseconds;

SpawnOptions helper(std::vector<std::string> args) {
  SpawnOptions options;
  options.argv = {CHILD_HELPER};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  return options;
}

std::unique_ptr<Subprocess> spawn_ok(SpawnOptions options) {
  auto child = Subprocess::spawn(std::move(options));
  EXPECT_TRUE(child.ok()) << (child.ok() ? "" : child.error().message());
  return child.ok() ? std::move(*child) : nullptr;
}

std::string first_line(Subprocess& child) {
  std::string line;
  (void)child.for_each_stdout_line(
      [&](std::string_view text) {
        if (line.empty()) line = text;
      },
      deadline_after(std::chrono::seconds(10)));
  return line;
}

// Reads one line without waiting for the end of the output (the child keeps running).
std::string read_one_line(Subprocess& child) {
  auto line = child.next_stdout_line(deadline_after(std::chrono::seconds(10)));
  return line.ok() && line->has_value() ? std::string(**line) : std::string();
}

// A process that is gone, or only a zombie waiting for someone else to reap it.
bool ends_within(pid_t pid, std::chrono::seconds limit) {
  Deadline deadline = deadline_after(limit);
  while (SteadyClock::now() < deadline) {
    auto stat = procfs::process_stat(pid);
    if (!stat.ok() || stat->state == 'Z') return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

size_t open_fd_count() { return procfs::open_fds().value().size(); }
size_t child_count() { return procfs::children().value().size(); }

TEST(Subprocess, ThousandSpawnExitCyclesLeaveFdAndChildCountsUnchanged) {
  size_t fds_before = open_fd_count();
  size_t children_before = child_count();
  for (int i = 0; i < 1000; ++i) {
    SpawnOptions options;
    options.argv = {"true"};
    auto child = spawn_ok(std::move(options));
    ASSERT_NE(child, nullptr);
    ASSERT_TRUE(child->for_each_stdout_line([](std::string_view) {}).ok());
    auto status = child->wait();
    ASSERT_TRUE(status.ok());
    ASSERT_TRUE(status->success()) << status->describe();
  }
  EXPECT_EQ(open_fd_count(), fds_before);
  EXPECT_EQ(child_count(), children_before);
}

TEST(Subprocess, ChildIgnoringSigtermIsKilledAtTheDeadline) {
  auto child = spawn_ok(helper({"ignore-term"}));
  ASSERT_EQ(read_one_line(*child), "ready");
  pid_t pid = child->pid();
  ExitStatus status = child->terminate(milliseconds(300));
  EXPECT_TRUE(status.signaled);
  EXPECT_EQ(status.signal, SIGKILL) << status.describe();
  EXPECT_FALSE(procfs::process_stat(pid).ok()) << "reaped, so not even a zombie";
}

TEST(Subprocess, CooperativeChildEndsWithSigterm) {
  auto child = spawn_ok(helper({"sleep"}));
  ASSERT_EQ(read_one_line(*child), "ready");
  ExitStatus status = child->terminate(std::chrono::seconds(10));
  EXPECT_TRUE(status.signaled);
  EXPECT_EQ(status.signal, SIGTERM) << status.describe();
}

TEST(Subprocess, GrandchildInTheGroupIsKilledToo) {
  auto child = spawn_ok(helper({"grandchild"}));
  pid_t grandchild = std::stoi(read_one_line(*child));
  ASSERT_TRUE(procfs::process_stat(grandchild).ok());
  EXPECT_EQ(procfs::process_stat(grandchild)->pgid, child->pid());
  child->terminate(milliseconds(200));
  EXPECT_TRUE(ends_within(grandchild, std::chrono::seconds(10)));
}

TEST(Subprocess, LeaderExitTakesTheRestOfItsGroupWithIt) {
  auto child = spawn_ok(helper({"exit-leaving-grandchild"}));
  pid_t grandchild = std::stoi(read_one_line(*child));
  auto status = child->wait(deadline_after(std::chrono::seconds(10)));
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->success());
  EXPECT_TRUE(ends_within(grandchild, std::chrono::seconds(10)));
}

TEST(Subprocess, DeathBySigsegvIsReportedWithTheSignalName) {
  auto child = spawn_ok(helper({"segv"}));
  auto status = child->wait();
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->signal, SIGSEGV);
  EXPECT_EQ(status->describe().rfind("killed by SIGSEGV (Segmentation fault)", 0), 0u)
      << status->describe();
}

TEST(Subprocess, ExitCodeIsReported) {
  auto child = spawn_ok(helper({"exit", "7"}));
  auto status = child->wait();
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(status->signaled);
  EXPECT_EQ(status->code, 7);
  EXPECT_EQ(status->describe(), "exited with code 7");
}

TEST(Subprocess, TwoHundredMegabytesAreReadLineByLineInFlatMemory) {
  constexpr long long kBytes = 200LL * 1000 * 1000;
  auto child = spawn_ok(helper({"print", std::to_string(kBytes)}));
  // Reset the peak-RSS mark so that VmHWM measures this read alone (proc(5), clear_refs).
  ASSERT_TRUE(std::ofstream("/proc/self/clear_refs") << "5");
  uint64_t rss_before = procfs::memory_usage()->rss_kb;
  long long lines = 0, bytes = 0;
  ASSERT_TRUE(child
                  ->for_each_stdout_line([&](std::string_view line) {
                    ++lines;
                    bytes += static_cast<long long>(line.size()) + 1;
                  })
                  .ok());
  uint64_t peak_after = procfs::memory_usage()->peak_rss_kb;
  EXPECT_EQ(lines, kBytes / 100);
  EXPECT_EQ(bytes, kBytes);
  EXPECT_LT(peak_after - std::min(peak_after, rss_before), 8u * 1024)
      << "reading grew the process by " << (peak_after - rss_before) << " kB";
  EXPECT_TRUE(child->wait()->success());
}

TEST(Subprocess, DestroyingARunningSubprocessKillsAndReapsIt) {
  size_t children_before = child_count();
  auto child = spawn_ok(helper({"ignore-term"}));
  ASSERT_EQ(read_one_line(*child), "ready");
  pid_t pid = child->pid();
  child.reset();
  EXPECT_FALSE(procfs::process_stat(pid).ok()) << "neither running nor a zombie";
  EXPECT_EQ(child_count(), children_before);
}

TEST(Subprocess, ChildSeesOnlyTheStandardDescriptors) {
  UniqueFd inheritable(::open("/dev/null", O_RDONLY));  // deliberately without O_CLOEXEC
  ASSERT_TRUE(inheritable.valid());
  auto child = spawn_ok(helper({"fds"}));
  std::vector<std::string> fds;
  ASSERT_TRUE(child->for_each_stdout_line([&](std::string_view fd) { fds.emplace_back(fd); }).ok());
  EXPECT_EQ(fds, (std::vector<std::string>{"0", "1", "2"}));
}

TEST(Subprocess, MissingProgramIsAClearErrorAndLeavesNoChild) {
  size_t children_before = child_count();
  size_t fds_before = open_fd_count();
  SpawnOptions in_path;
  in_path.argv = {"dormant-no-such-program"};
  auto not_found = Subprocess::spawn(in_path);
  ASSERT_FALSE(not_found.ok());
  EXPECT_EQ(not_found.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(not_found.error().message().find("dormant-no-such-program: command not found"),
            std::string::npos);

  SpawnOptions by_path;
  by_path.argv = {"/nonexistent/dormant-tool"};
  auto no_file = Subprocess::spawn(by_path);
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.error().message(),
            "cannot start /nonexistent/dormant-tool: execve(/nonexistent/dormant-tool): No such "
            "file or directory");
  EXPECT_EQ(child_count(), children_before);
  EXPECT_EQ(open_fd_count(), fds_before);
}

TEST(Subprocess, AHeldChildRunsItsProgramOnlyOnceReleased) {
  SpawnOptions options = helper({"exit", "7"});
  options.held = true;
  auto child = spawn_ok(options);
  ASSERT_TRUE(child);
  std::error_code error;
  auto running =
      std::filesystem::read_symlink("/proc/" + std::to_string(child->pid()) + "/exe", error);
  EXPECT_EQ(running, std::filesystem::read_symlink("/proc/self/exe"))
      << "the child is still this program, waiting before exec";
  EXPECT_FALSE(child->try_wait());
  ASSERT_TRUE(child->release().ok());
  auto status = child->wait(deadline_after(std::chrono::seconds(10)));
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->code, 7);
}

TEST(Subprocess, AHeldChildDestroyedUnreleasedNeverRunsItsProgram) {
  size_t children_before = child_count();
  auto marker =
      std::filesystem::temp_directory_path() / ("dormant-held-" + std::to_string(::getpid()));
  std::filesystem::remove(marker);
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "touch " + marker.string()};
  options.held = true;
  spawn_ok(options).reset();
  EXPECT_EQ(child_count(), children_before);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(Subprocess, AHeldChildThatCannotExecSaysWhyAtRelease) {
  size_t children_before = child_count();
  SpawnOptions options;
  options.argv = {"/nonexistent/dormant-tool"};
  options.held = true;
  auto child = Subprocess::spawn(options);
  if (!child.ok()) {  // found missing before the fork: as good
    EXPECT_NE(child.error().message().find("/nonexistent/dormant-tool"), std::string::npos);
    return;
  }
  auto released = (*child)->release();
  ASSERT_FALSE(released.ok());
  EXPECT_NE(released.error().message().find("No such file or directory"), std::string::npos)
      << released.error().message();
  child->reset();
  EXPECT_EQ(child_count(), children_before);
}

TEST(Subprocess, BadWorkingDirectoryIsReported) {
  SpawnOptions options = helper({"cwd"});
  options.cwd = "/nonexistent-dir";
  auto child = Subprocess::spawn(options);
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message().find("chdir(/nonexistent-dir): No such file or directory"),
            std::string::npos)
      << child.error().message();
}

TEST(Subprocess, WorkingDirectoryAndEnvironment) {
  SpawnOptions in_tmp = helper({"cwd"});
  in_tmp.cwd = "/tmp";
  EXPECT_EQ(first_line(*spawn_ok(in_tmp)), "/tmp");

  ::setenv("DORMANT_TEST_INHERITED", "parent", 1);
  EXPECT_EQ(first_line(*spawn_ok(helper({"env", "DORMANT_TEST_INHERITED"}))), "parent");
  SpawnOptions overridden = helper({"env", "DORMANT_TEST_INHERITED"});
  overridden.env = {"DORMANT_TEST_INHERITED=child"};
  EXPECT_EQ(first_line(*spawn_ok(overridden)), "child");
  SpawnOptions clean = helper({"env", "DORMANT_TEST_INHERITED"});
  clean.inherit_env = false;
  EXPECT_EQ(first_line(*spawn_ok(clean)), "<unset>");
  ::unsetenv("DORMANT_TEST_INHERITED");
}

TEST(Subprocess, StdinIsDevNull) { EXPECT_EQ(first_line(*spawn_ok(helper({"stdin"}))), "0"); }

TEST(Subprocess, StdoutToAFile) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dormant-out-" + std::to_string(::getpid()));
  SpawnOptions options = helper({"stderr", "1"});
  options.stdout_to = Redirect::file(path);
  options.stderr_to = Redirect::null();
  auto child = spawn_ok(options);
  EXPECT_EQ(child->wait()->code, 3);
  EXPECT_EQ(read_file(path).value(), "done\n");
  std::filesystem::remove(path);
}

TEST(Subprocess, StderrIsCollectedWhileStdoutIsReadAndKeptBounded) {
  auto child = spawn_ok(helper({"stderr", "100000"}));  // ~1.3 MB: more than a pipe holds
  std::vector<std::string> out;
  ASSERT_TRUE(child->for_each_stdout_line([&](std::string_view l) { out.emplace_back(l); }).ok());
  ASSERT_TRUE(child->drain_stderr(deadline_after(std::chrono::seconds(10))).ok());
  EXPECT_EQ(out, std::vector<std::string>{"done"});
  std::string tail = child->stderr_tail();
  EXPECT_LE(tail.size(), Subprocess::kStderrTailBytes);
  EXPECT_TRUE(tail.ends_with("err line 99999\n"));
  EXPECT_EQ(child->wait()->code, 3);
}

TEST(Subprocess, ReadingStopsAtItsDeadline) {
  auto child = spawn_ok(helper({"sleep"}));
  auto read =
      child->for_each_stdout_line([](std::string_view) {}, deadline_after(milliseconds(200)));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().kind(), ErrorKind::kTimeout);
  auto waited = child->wait(deadline_after(milliseconds(50)));
  ASSERT_FALSE(waited.ok());
  EXPECT_EQ(waited.error().kind(), ErrorKind::kTimeout);
  EXPECT_EQ(child->terminate(std::chrono::seconds(5)).signal, SIGTERM);
}

TEST(Subprocess, TerminateFromAnotherThreadEndsTheReader) {
  auto child = spawn_ok(helper({"ignore-term"}));
  ASSERT_EQ(read_one_line(*child), "ready");
  Result<void> read = ok();
  std::thread reader([&] { read = child->for_each_stdout_line([](std::string_view) {}); });
  ExitStatus status = child->terminate(milliseconds(100));
  reader.join();
  EXPECT_TRUE(read.ok());
  EXPECT_EQ(status.signal, SIGKILL);
  EXPECT_EQ(child->terminate(milliseconds(100)).signal, SIGKILL) << "a second call is harmless";
}

TEST(ChildGroups, AGroupIsRegisteredFromSpawnUntilItsLeaderIsReaped) {
  ChildGroups groups;
  SpawnOptions options = helper({"sleep"});
  options.groups = &groups;
  auto child = spawn_ok(options);
  ASSERT_EQ(read_one_line(*child), "ready");
  EXPECT_EQ(groups.size(), 1u);
  child->terminate(milliseconds(500));
  EXPECT_EQ(groups.size(), 0u);
}

// What a profiler's abort() relies on: a terminate() waiting out a long grace on a child that
// ignores SIGTERM returns as soon as another thread kills the groups.
TEST(ChildGroups, KillAllEndsATerminateWaitingOnAnotherThread) {
  ChildGroups groups;
  SpawnOptions options = helper({"ignore-term"});
  options.groups = &groups;
  auto child = spawn_ok(options);
  ASSERT_EQ(read_one_line(*child), "ready");
  auto terminated =
      std::async(std::launch::async, [&] { return child->terminate(std::chrono::hours(1)); });
  EXPECT_EQ(terminated.wait_for(milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(groups.kill_all(), 1);
  ASSERT_EQ(terminated.wait_for(std::chrono::seconds(60)), std::future_status::ready)
      << "terminate() still waits out its grace";
  EXPECT_EQ(terminated.get().signal, SIGKILL);
  EXPECT_EQ(groups.size(), 0u);
}

TEST(ChildGroups, AChildSpawnedAfterKillAllIsKilledAtOnce) {
  ChildGroups groups;
  EXPECT_EQ(groups.kill_all(), 0);
  SpawnOptions options = helper({"sleep"});
  options.groups = &groups;
  auto child = spawn_ok(options);
  auto status = child->wait(deadline_after(std::chrono::seconds(60)));
  ASSERT_TRUE(status.ok()) << "still running";
  EXPECT_EQ(status->signal, SIGKILL) << status->describe();
}

TEST(RunCommand, CollectsOutputAndStatus) {
  auto output =
      run_command({CHILD_HELPER, "stderr", "2"}, deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(output.ok()) << output.error().message();
  EXPECT_EQ(output->status.code, 3);
  EXPECT_EQ(output->stdout_text, "done\n");
  EXPECT_EQ(output->stderr_text, "err line 0\nerr line 1\n");
}

TEST(RunCommand, TimeoutKillsTheCommand) {
  size_t children_before = child_count();
  auto output = run_command({CHILD_HELPER, "ignore-term"}, deadline_after(milliseconds(300)));
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.error().kind(), ErrorKind::kTimeout);
  EXPECT_EQ(child_count(), children_before);
}

}  // namespace
}  // namespace dormant
