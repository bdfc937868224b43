// Issue 22, agent 1: an unprivileged user maps a crafted ELF file executable during a whole-host
// eBPF session, so that the agent (root) reads its symbols. The session's peak RSS stays within
// 64 MB of the same session beside a harmless file, and its profile is written.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/crafted_elf.h"

#include "common/atomic_file.h"
#include "common/subprocess.h"
#include "profile/collapsed.h"

namespace dormant {
namespace {

namespace fs = std::filesystem;
using dormant::testing::crafted_elf;
using dormant::testing::CraftedElf;

constexpr uid_t kNobody = 65534;

struct AgentRun {
  int status = -1;
  long peak_rss_kb = 0;  // the agent's own, from wait4
  std::string log;
};

class CraftedElfAttackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: an eBPF session, and a user to map as";
    root_ = fs::temp_directory_path() / ("dormant-elf-attack-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                               fs::perms::others_read | fs::perms::others_exec);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  fs::path write_elf(const std::string& name, const CraftedElf& elf) {
    fs::path path = root_ / name;
    std::ofstream(path, std::ios::binary) << crafted_elf(elf);
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                              fs::perms::others_read);
    return path;
  }

  // A process of user nobody mapping `file` executable, busy for `seconds`.
  std::unique_ptr<Subprocess> map_as_nobody(const fs::path& file, int seconds) {
    SpawnOptions options;
    options.argv = {MAP_EXECUTABLE, std::to_string(kNobody), file.string(),
                    std::to_string(seconds)};
    auto mapper = Subprocess::spawn(options);
    EXPECT_TRUE(mapper.ok()) << mapper.error().message();
    if (!mapper.ok()) return nullptr;
    auto first = (*mapper)->next_stdout_line(deadline_after(std::chrono::seconds(10)));
    EXPECT_TRUE(first.ok() && *first && **first == "mapped") << "the file was not mapped";
    return std::move(*mapper);
  }

  // A whole-host eBPF one-shot session of `seconds`, measured by wait4.
  AgentRun run_session(const std::string& name, int seconds) {
    fs::path out = root_ / name;
    std::vector<std::string> args = {DORMANT_AGENT,
                                     "--system-profiler",
                                     "ebpf",
                                     "-d",
                                     std::to_string(seconds),
                                     "-f",
                                     "99",
                                     "-o",
                                     out.string(),
                                     "--state-dir",
                                     (root_ / "state").string()};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::string log_path = (root_ / (name + ".log")).string();
    pid_t pid = ::fork();
    if (pid == 0) {
      int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (log < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    AgentRun run;
    rusage usage{};
    if (pid < 0 || ::wait4(pid, &run.status, 0, &usage) != pid) return run;
    run.peak_rss_kb = usage.ru_maxrss;
    run.log = read_file(log_path).value_or("");
    return run;
  }

  uint64_t samples_of(const std::string& name, std::string_view comm) {
    auto text = read_file(root_ / name / "last_profile.col");
    EXPECT_TRUE(text.ok()) << "no profile was written";
    if (!text.ok()) return 0;
    auto profile = profile::read_collapsed(*text);
    EXPECT_TRUE(profile.ok()) << profile.error().message();
    if (!profile.ok()) return 0;
    uint64_t total = 0;
    profile->stacks.for_each([&](const profile::StackView& stack) {
      if (stack.comm == comm) total += stack.count;
    });
    return total;
  }

  fs::path root_;
};

TEST_F(CraftedElfAttackTest, AnotherUsersCraftedElfCostsAWholeHostSessionLessThan64MB) {
  constexpr int kSeconds = 4;
  // As many symbols with short names, then 4000 naming one 98,000-byte string (196 kB: 392 MB
  // copied name by name) and 21,000 naming one of 500,000 bytes (1 MB: 10.5 GB).
  CraftedElf harmless;
  harmless.name_bytes = 16;
  CraftedElf hostile;
  CraftedElf larger;
  larger.symbols = 21000;
  larger.name_bytes = 500000;
  fs::path harmless_file = write_elf("harmless.so", harmless);
  fs::path hostile_files[] = {write_elf("hostile.so", hostile), write_elf("larger.so", larger)};

  AgentRun baseline;
  {
    auto mapper = map_as_nobody(harmless_file, kSeconds + 4);
    ASSERT_NE(mapper, nullptr);
    baseline = run_session("baseline", kSeconds);
  }
  if (baseline.log.find("ebpf: sampling") == std::string::npos) {
    GTEST_SKIP() << "the eBPF sampler does not run here:\n" << baseline.log;
  }
  ASSERT_TRUE(WIFEXITED(baseline.status) && WEXITSTATUS(baseline.status) == 0) << baseline.log;
  ASSERT_GT(samples_of("baseline", "map_executable"), 0u) << "the mapper was never sampled";

  AgentRun attacked;
  {
    auto first = map_as_nobody(hostile_files[0], kSeconds + 4);
    auto second = map_as_nobody(hostile_files[1], kSeconds + 4);
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    attacked = run_session("attacked", kSeconds);
  }
  std::printf(
      "whole-host eBPF session peak RSS: %ld kB beside a harmless file, %ld kB beside "
      "the crafted ones\n",
      baseline.peak_rss_kb, attacked.peak_rss_kb);
  ASSERT_TRUE(WIFEXITED(attacked.status) && WEXITSTATUS(attacked.status) == 0) << attacked.log;
  EXPECT_GT(samples_of("attacked", "map_executable"), 0u) << "the mappers were never sampled";
  EXPECT_LT(attacked.peak_rss_kb, baseline.peak_rss_kb + 64 * 1024) << attacked.log;
}

}  // namespace
}  // namespace dormant
