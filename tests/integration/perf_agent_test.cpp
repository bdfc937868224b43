// dormant-agent with real perf (root), and with a fake perf that misbehaves.
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "scoped_cgroup.h"
#include "tests/support/eventually.h"
#include "tests/support/pprof_text.h"
#include "workload.h"

#include "common/atomic_file.h"
#include "common/subprocess.h"
#include "profile/collapsed.h"
#include "profilers/system/cgroup_layout.h"

namespace dormant {
namespace {

namespace fs = std::filesystem;
using dormant::testing::eventually;
using dormant::testing::ran_for_cpu_seconds;
using dormant::testing::spawn_workload;

class PerfAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: perf -a and perf_event_paranoid";
    if (!run_command({"perf", "--version"}, deadline_after(std::chrono::seconds(10))).ok()) {
      GTEST_SKIP() << "perf is not installed";
    }
    root_ = fs::temp_directory_path() /
            ("dormant-it-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "tmp");
    fs::create_directories(root_ / "out");
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // Runs the agent to its end with its state directory and TMPDIR in this test's directory.
  CommandOutput run_agent(std::vector<std::string> args, std::vector<std::string> env = {}) {
    SpawnOptions options;
    options.argv = {
        DORMANT_AGENT, "--system-profiler",       system_profiler_, "-o", (root_ / "out").string(),
        "--state-dir", (root_ / "state").string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = {"TMPDIR=" + (root_ / "tmp").string()};
    options.env.insert(options.env.end(), env.begin(), env.end());
    auto agent = Subprocess::spawn(options);
    EXPECT_TRUE(agent.ok());
    CommandOutput output;
    EXPECT_TRUE(
        (*agent)
            ->for_each_stdout_line(
                [&](std::string_view line) { output.stdout_text.append(line).push_back('\n'); },
                deadline_after(std::chrono::seconds(120)))
            .ok());
    auto status = (*agent)->wait(deadline_after(std::chrono::seconds(60)));
    EXPECT_TRUE(status.ok());
    output.status = status.ok() ? *status : (*agent)->terminate(std::chrono::seconds(1));
    output.stderr_text = (*agent)->stderr_tail();
    return output;
  }

  // Starts the agent in the background, its stderr going to agent.log.
  std::unique_ptr<Subprocess> start_agent(std::vector<std::string> args,
                                          std::vector<std::string> env = {}) {
    SpawnOptions options;
    options.argv = {
        DORMANT_AGENT, "--system-profiler",       system_profiler_, "-o", (root_ / "out").string(),
        "--state-dir", (root_ / "state").string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = {"TMPDIR=" + (root_ / "tmp").string()};
    options.env.insert(options.env.end(), env.begin(), env.end());
    options.stdout_to = Redirect::null();
    options.stderr_to = Redirect::file(root_ / "agent.log");
    auto agent = Subprocess::spawn(options);
    EXPECT_TRUE(agent.ok());
    return agent.ok() ? std::move(*agent) : nullptr;
  }

  std::string agent_log() { return read_file(root_ / "agent.log").value_or(""); }

  size_t files_ending_with(const std::string& suffix) {
    size_t count = 0;
    for (const auto& entry : fs::directory_iterator(root_ / "out")) {
      std::string name = entry.path().filename().string();
      count += name.starts_with("profile_") && name.ends_with(suffix);
    }
    return count;
  }

  // SIGTERM, then the agent must exit by itself, successfully.
  void stop_agent(Subprocess& agent) {
    ::kill(agent.pid(), SIGTERM);
    auto status = agent.wait(deadline_after(std::chrono::seconds(60)));
    ASSERT_TRUE(status.ok()) << "the agent did not stop on SIGTERM";
    EXPECT_TRUE(status->success()) << status->describe() << "\n" << agent_log();
  }

  profile::CollapsedProfile last_profile() {
    auto text = read_file(root_ / "out" / "last_profile.col");
    EXPECT_TRUE(text.ok()) << "no profile was written";
    auto profile = profile::read_collapsed(text.value_or("# {}\n"));
    EXPECT_TRUE(profile.ok()) << profile.error().message();
    return profile.ok() ? std::move(*profile) : profile::CollapsedProfile{};
  }

  // Samples of `comm` whose stack holds `frame`.
  static uint64_t samples_with(const profile::StackTable& stacks, std::string_view comm,
                               std::string_view frame) {
    uint64_t total = 0;
    stacks.for_each([&](const profile::StackView& stack) {
      if (stack.comm != comm) return;
      for (auto id : stack.frame_ids) {
        if (stacks.string(id) == frame) {
          total += stack.count;
          return;
        }
      }
    });
    return total;
  }

  // perf's work files live in <state dir>/work, nothing in TMPDIR.
  void expect_nothing_left_behind() {
    EXPECT_TRUE(fs::is_empty(root_ / "tmp")) << "files were left in TMPDIR";
    EXPECT_TRUE(!fs::exists(root_ / "state" / "work") || fs::is_empty(root_ / "state" / "work"))
        << "perf's work files were left behind";
    auto leftovers = run_command({"pgrep", "-f", (root_ / "state").string()},
                                 deadline_after(std::chrono::seconds(10)));
    ASSERT_TRUE(leftovers.ok());
    EXPECT_EQ(leftovers->stdout_text, "") << "a perf process is still running";
  }

  static int count_lines_with(const std::string& text, const std::string& needle) {
    int count = 0;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) count += line.find(needle) != std::string::npos;
    return count;
  }

  fs::path root_;
  std::string system_profiler_ = "perf";  // these tests are about perf, unless they say
};

// eBPF and perf, one after the other on the same workload at 999 Hz: each finds hot_two:hot_one
// at 2:1 within 5%, and they agree with each other within 5%.
TEST_F(PerfAgentTest, EbpfAndPerfMeasureTheKnownWorkloadAlike) {
  auto program = spawn_workload(20);
  ASSERT_NE(program, nullptr);
  std::map<std::string, double> ratios;
  for (const char* profiler : {"ebpf", "perf"}) {
    SCOPED_TRACE(profiler);
    system_profiler_ = profiler;
    CommandOutput agent =
        run_agent({"-d", "6", "-f", "999", "--pids", std::to_string(program->pid())});
    ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
    EXPECT_NE(agent.stderr_text.find(std::string(profiler) == "ebpf" ? "ebpf: sampling"
                                                                     : "perf: recording"),
              std::string::npos)
        << agent.stderr_text;
    profile::CollapsedProfile profile = last_profile();
    uint64_t two = samples_with(profile.stacks, "known_ratio", "hot_two");
    uint64_t one = samples_with(profile.stacks, "known_ratio", "hot_one");
    ASSERT_GT(one, 1000u) << "too few samples of the workload: " << agent.stderr_text;
    ratios[profiler] = static_cast<double>(two) / static_cast<double>(one);
    std::printf("known_ratio by %s: hot_two %lu, hot_one %lu samples, ratio %.3f\n", profiler,
                static_cast<unsigned long>(two), static_cast<unsigned long>(one), ratios[profiler]);
    EXPECT_NEAR(ratios[profiler], 2.0, 0.1);
  }
  EXPECT_NEAR(ratios["ebpf"], ratios["perf"], ratios["perf"] * 0.05);
  expect_nothing_left_behind();
}

// Without privileges, eBPF says what it needs; in auto the agent goes on with perf.
TEST_F(PerfAgentTest, WithoutPrivilegesEbpfSaysWhyAndAutoFallsBackToPerf) {
  for (const auto& dir : {root_, root_ / "tmp"}) {
    fs::permissions(dir, fs::perms::all);
  }
  // The agent makes its -o and state directory its own: one root owns, or everyone may write
  // to, is refused at start.
  auto as_nobody = [&](const std::string& profiler) {
    return run_command(
        {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", DORMANT_AGENT,
         "--system-profiler", profiler, "-o", (root_ / "nobody-out").string(), "--state-dir",
         (root_ / "nobody-state").string(), "-d", "1"},
        deadline_after(std::chrono::seconds(120)));
  };
  auto ebpf = as_nobody("ebpf");
  ASSERT_TRUE(ebpf.ok()) << ebpf.error().message();
  EXPECT_NE(ebpf->stderr_text.find("the eBPF sampler needs CAP_BPF and CAP_PERFMON (or root)"),
            std::string::npos)
      << ebpf->stderr_text;
  auto automatic = as_nobody("auto");
  ASSERT_TRUE(automatic.ok()) << automatic.error().message();
  EXPECT_NE(automatic->stderr_text.find("ebpf does not run here (the eBPF sampler needs CAP_BPF"),
            std::string::npos)
      << automatic->stderr_text;
  EXPECT_NE(automatic->stderr_text.find("trying perf"), std::string::npos)
      << automatic->stderr_text;
}

TEST_F(PerfAgentTest, KnownRatioWorkloadShowsBothFunctionsInTheirRatio) {
  auto program = spawn_workload(12);
  ASSERT_NE(program, nullptr);
  CommandOutput agent = run_agent({"-d", "6", "-f", "499"});
  ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  uint64_t two = samples_with(profile.stacks, "known_ratio", "hot_two");
  uint64_t one = samples_with(profile.stacks, "known_ratio", "hot_one");
  ASSERT_GT(one, 100u) << "too few samples of the workload: " << agent.stderr_text;
  double ratio = static_cast<double>(two) / static_cast<double>(one);
  std::printf("known_ratio: hot_two %lu, hot_one %lu samples, ratio %.3f\n",
              static_cast<unsigned long>(two), static_cast<unsigned long>(one), ratio);
  EXPECT_NEAR(ratio, 2.0, 0.2);
  // The flamegraph of this real profile: well-formed, and it draws both hot functions.
  fs::path flamegraph = root_ / "out" / "last_flamegraph.svg";
  auto lint = run_command({"xmllint", "--noout", flamegraph.string()},
                          deadline_after(std::chrono::seconds(60)));
  ASSERT_TRUE(lint.ok()) << lint.error().message();
  EXPECT_TRUE(lint->status.success()) << lint->stderr_text;
  std::string svg = read_file(flamegraph).value_or("");
  EXPECT_NE(svg.find("<title>hot_two"), std::string::npos);
  EXPECT_NE(svg.find("<title>hot_one"), std::string::npos);
  EXPECT_EQ(profile.header["metadata"]["run_arguments"]["frequency"], 499);
  expect_nothing_left_behind();
}

// A node in its own mount and pid namespaces writes its perf map in its own /tmp under its own
// pid: perf script reads it there (it enters the process's mount namespace and uses its pid in
// its pid namespace), and the perf path names that JavaScript as the eBPF sampler does.
TEST_F(PerfAgentTest, NodeInItsOwnNamespacesIsNamedFromItsOwnPerfMap) {
  if (!fs::exists("/usr/bin/node")) GTEST_SKIP() << "/usr/bin/node is not installed";
  SpawnOptions spawn;
  spawn.argv = {"unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c",
                // The script is copied in: the checkout may itself be under /tmp.
                "script=$(cat \"$1\") && mount -t tmpfs none /tmp && "
                "printf '%s\\n' \"$script\" >/tmp/node_ratio.js && exec /usr/bin/node "
                "--perf-basic-prof --interpreted-frames-native-stack --logfile=/dev/null "
                "/tmp/node_ratio.js 12",
                "sh", NODE_RATIO};
  auto node = Subprocess::spawn(spawn);
  ASSERT_TRUE(node.ok()) << node.error().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past V8's first compilations
  CommandOutput agent = run_agent({"-d", "5", "-f", "499"});
  node->reset();
  ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  uint64_t total = 0, javascript = 0;
  std::map<std::string, uint64_t> functions;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "node") return;
    total += stack.count;
    bool named = false;
    for (auto id : stack.frame_ids) {
      std::string_view frame = profile.stacks.string(id);
      if (!frame.starts_with("JS:")) continue;
      named = true;
      for (const char* function : {"alpha", "beta", "gamma"}) {
        if (frame.substr(4).starts_with(std::string(function) + " "))
          functions[function] += stack.count;
      }
    }
    if (named) javascript += stack.count;
  });
  std::printf("node: %lu samples, %lu with JavaScript named; alpha %lu, beta %lu, gamma %lu\n",
              static_cast<unsigned long>(total), static_cast<unsigned long>(javascript),
              static_cast<unsigned long>(functions["alpha"]),
              static_cast<unsigned long>(functions["beta"]),
              static_cast<unsigned long>(functions["gamma"]));
  ASSERT_GT(total, 1000u) << agent.stderr_text;
  EXPECT_GE(javascript * 100, total * 90);
  ASSERT_GT(functions["alpha"], 100u);
  EXPECT_NEAR(static_cast<double>(functions["gamma"]) / static_cast<double>(functions["alpha"]),
              3.0, 0.75);
}

// --output-format pprof: the same profile as the collapsed file, read back by protoc.
TEST_F(PerfAgentTest, PprofOutputHoldsTheSameStacksAsTheCollapsedFile) {
  auto program = spawn_workload(8);
  ASSERT_NE(program, nullptr);
  CommandOutput agent =
      run_agent({"-d", "3", "-f", "199", "--output-format", "collapsed,pprof,svg"});
  ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  ASSERT_GT(profile.stacks.total_samples(), 0u);
  auto bytes = read_file(root_ / "out" / "last_profile.pb.gz");
  ASSERT_TRUE(bytes.ok()) << agent.stderr_text;
  auto decoded = testing::decode_pprof(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.error().message();
  std::map<std::string, int64_t> expected;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    std::string key = "comm=" + std::string(stack.comm);  // labels in decode_pprof's order
    if (!stack.container.empty()) key += ",container=" + std::string(stack.container);
    key += "|";
    for (size_t i = 0; i < stack.frame_ids.size(); ++i) {
      key += (i ? ";" : "") + std::string(profile.stacks.string(stack.frame_ids[i]));
    }
    expected[key] += static_cast<int64_t>(stack.count);
  });
  EXPECT_EQ(decoded->stacks, expected);
  EXPECT_EQ(decoded->period, 1'000'000'000 / 199);
  EXPECT_GT(decoded->duration_nanos, 0);
  EXPECT_EQ(files_ending_with(".svg"), 1u);

  // pprof alone: the collapsed file it was made from does not stay.
  fs::remove_all(root_ / "out");
  agent = run_agent({"-d", "1", "--output-format", "pprof"});
  ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(files_ending_with(".pb.gz"), 1u);
  EXPECT_EQ(files_ending_with(".col"), 0u);
  EXPECT_EQ(files_ending_with(".svg"), 0u);
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, PerfScriptKilledBySigsegvGivesOneWarningAndAnEmptySnapshot) {
  CommandOutput agent = run_agent({"-d", "1", "--perf-path", FAKE_PERF}, {"FAKE_PERF_SCRIPT=segv"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "perf script was killed by SIGSEGV"), 1)
      << agent.stderr_text;
  EXPECT_EQ(last_profile().stacks.total_samples(), 0u);
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, EveryEventDyingBySignalAdvisesPerfModeDisabled) {
  CommandOutput agent =
      run_agent({"-d", "1", "--perf-path", FAKE_PERF}, {"FAKE_PERF_SCRIPT=segv-always"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "--perf-mode disabled"), 1) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "critical"), 1) << agent.stderr_text;
  EXPECT_EQ(last_profile().stacks.total_samples(), 1u)
      << "only the marker saying why perf is missing";
  expect_nothing_left_behind();
}

// A person's `perf record -a` already holds perf events on every CPU: eBPF and perf sessions start
// beside it and both find the workload; the person's perf records on, unharmed.
TEST_F(PerfAgentTest, ProfilesBesideAPersonsPerfRecord) {
  auto program = spawn_workload(20);
  ASSERT_NE(program, nullptr);
  SpawnOptions person;
  person.argv = {
      "perf", "record", "-q", "-a", "-g", "-F", "99", "-o", (root_ / "person.data").string(),
      "--",   "sleep",  "14"};
  person.stdout_to = Redirect::null();
  auto theirs = Subprocess::spawn(person);
  ASSERT_TRUE(theirs.ok()) << theirs.error().message();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // theirs holds its events by then
  for (const char* profiler : {"ebpf", "perf"}) {
    SCOPED_TRACE(profiler);
    system_profiler_ = profiler;
    CommandOutput agent =
        run_agent({"-d", "3", "-f", "99", "--pids", std::to_string(program->pid())});
    ASSERT_EQ(agent.status.code, 0) << agent.stderr_text;
    EXPECT_GT(samples_with(last_profile().stacks, "known_ratio", "hot_two"), 50u)
        << agent.stderr_text;
  }
  auto status = (*theirs)->wait(deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(status.ok());
  EXPECT_TRUE(status->success()) << status->describe() << "\n" << (*theirs)->stderr_tail();
  EXPECT_GT(fs::file_size(root_ / "person.data"), 0u);
}

// A host (or a unit file) that gives the agent few file descriptors: the profilers that cannot
// open what they need say so, by name and errno, and the profile says why it is empty; nothing
// crashes.
TEST_F(PerfAgentTest, TooFewFileDescriptorsIsAClearErrorNotACrash) {
  std::string command = "ulimit -n 12 && exec " DORMANT_AGENT " -d 1 -o " +
                        (root_ / "out").string() + " --state-dir " + (root_ / "state").string() +
                        " --gpu-mode disabled";
  auto ran = run_command({"/bin/sh", "-c", command}, deadline_after(std::chrono::seconds(60)));
  ASSERT_TRUE(ran.ok()) << ran.error().message();
  EXPECT_EQ(ran->status.code, 0) << ran->status.describe() << "\n" << ran->stderr_text;
  EXPECT_NE(ran->stderr_text.find("Too many open files"), std::string::npos) << ran->stderr_text;
  EXPECT_NE(ran->stderr_text.find("no profiler is running"), std::string::npos) << ran->stderr_text;
  EXPECT_GE(last_profile().stacks.total_samples(), 1u) << "the marker saying why";
}

TEST_F(PerfAgentTest, HangingPerfScriptIsKilledAtItsDeadline) {
  CommandOutput agent =
      run_agent({"-d", "1", "--perf-path", FAKE_PERF, "--perf-script-timeout", "2"},
                {"FAKE_PERF_SCRIPT=hang"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "perf script did not finish"), 1)
      << agent.stderr_text;
  EXPECT_TRUE(fs::exists(root_ / "out" / "last_profile.col"));
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, GarbageFromPerfScriptIsReportedOnce) {
  CommandOutput agent =
      run_agent({"-d", "1", "--perf-path", FAKE_PERF}, {"FAKE_PERF_SCRIPT=garbage"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "lines that are not perf output"), 1)
      << agent.stderr_text;
  EXPECT_EQ(last_profile().stacks.total_samples(), 0u);
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, FailingPerfScriptIsAnErrorWithItsStderr) {
  CommandOutput agent = run_agent({"-d", "1", "--perf-path", FAKE_PERF}, {"FAKE_PERF_SCRIPT=fail"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text,
                             "perf script exited with code 1: fake perf: failed to process sample"),
            1)
      << agent.stderr_text;
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, PerfIsRestartedWhenItsMemoryPassesTheLimit) {
  auto agent = start_agent({"-c", "-d", "1", "-f", "99", "--perf-restart-rss-mb", "1"});
  ASSERT_TRUE(eventually([&] { return count_lines_with(agent_log(), "wrote ") >= 2; },
                         std::chrono::seconds(60)))
      << agent_log();
  stop_agent(*agent);
  EXPECT_GE(count_lines_with(agent_log(), "restarting perf record because its memory passed 1 MB"),
            1)
      << agent_log();
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, MissingPerfIsOneClearLine) {
  CommandOutput agent = run_agent({"-d", "1", "--perf-path", "/nonexistent/perf"});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "perf is not installed"), 1) << agent.stderr_text;
  EXPECT_EQ(last_profile().stacks.total_samples(), 1u) << "the marker saying why perf is missing";
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, PidsMixOfLiveAndDead) {
  auto program = spawn_workload(8);
  ASSERT_NE(program, nullptr);
  std::string pids = std::to_string(program->pid()) + ",999999999";
  CommandOutput agent = run_agent({"-d", "3", "-f", "199", "--pids", pids});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  EXPECT_GT(samples_with(profile.stacks, "known_ratio", "burn"), 50u) << agent.stderr_text;
  uint64_t others = 0;
  profile.stacks.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "known_ratio") others += stack.count;
  });
  EXPECT_EQ(others, 0u) << "only the listed process is profiled";
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, OnlyDeadPidsSkipPerfWithAReason) {
  fs::path log = root_ / "perf-calls.log";
  CommandOutput agent =
      run_agent({"-d", "1", "--pids", "999999998,999999999", "--perf-path", FAKE_PERF},
                {"FAKE_PERF_LOG=" + log.string()});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text,
                             "perf skipped: none of the processes to profile is running"),
            1)
      << agent.stderr_text;
  EXPECT_FALSE(fs::exists(log)) << "perf was run";
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, SkipSystemProfilersAboveSpawnsNoPerf) {
  fs::path log = root_ / "perf-calls.log";
  CommandOutput agent =
      run_agent({"-d", "1", "--skip-system-profilers-above", "1", "--perf-path", FAKE_PERF},
                {"FAKE_PERF_LOG=" + log.string()});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "above --skip-system-profilers-above 1"), 1)
      << agent.stderr_text;
  EXPECT_FALSE(fs::exists(log)) << "perf was run";
  auto profile = last_profile();
  EXPECT_EQ(profile.stacks.total_samples(), 1u) << "only the marker saying why perf is missing";
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, ContinuousModeWritesAProfilePerDurationUntilSigterm) {
  auto agent = start_agent({"-c", "-d", "1", "-f", "99"});
  ASSERT_TRUE(eventually([&] { return files_ending_with(".col") >= 2; }, std::chrono::seconds(60)))
      << agent_log();
  stop_agent(*agent);
  EXPECT_GE(files_ending_with(".col"), 3u) << "the snapshot cut short by SIGTERM is written too";
  EXPECT_EQ(files_ending_with(".col"), files_ending_with(".svg"));
  EXPECT_GT(last_profile().stacks.total_samples(), 0u);
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, SigtermDuringASnapshotStillWritesWhatWasCollected) {
  auto program = spawn_workload(30);
  ASSERT_NE(program, nullptr);
  auto agent = start_agent({"-d", "600", "-f", "199"});
  ASSERT_TRUE(eventually([&] { return agent_log().find("perf: recording") != std::string::npos; },
                         std::chrono::seconds(60)))
      << agent_log();
  // 199 Hz over 1.5 s of the workload's CPU time: about 300 samples.
  ASSERT_TRUE(ran_for_cpu_seconds(program->pid(), 1.5));
  stop_agent(*agent);
  EXPECT_EQ(files_ending_with(".col"), 1u);
  EXPECT_GT(samples_with(last_profile().stacks, "known_ratio", "burn"), 50u) << agent_log();
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, SigtermWhileASnapshotIsParsedEndsTheRunAfterThatSnapshot) {
  const fs::path perf_log = root_ / "perf.log";
  auto agent = start_agent({"-c", "-d", "1", "-f", "99", "--perf-path", FAKE_PERF},
                           {"FAKE_PERF_SCRIPT=slow", "FAKE_PERF_LOG=" + perf_log.string()});
  // The first snapshot's perf script (not event discovery's trials) has started: it waits 3 s.
  auto snapshot_parsing = [&] {
    std::istringstream calls(read_file(perf_log).value_or(""));
    for (std::string call; std::getline(calls, call);) {
      if (call.starts_with("script") && call.find("trial-") == std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(eventually(snapshot_parsing, std::chrono::seconds(60), std::chrono::milliseconds(10)))
      << agent_log();
  stop_agent(*agent);
  EXPECT_EQ(files_ending_with(".col"), 1u) << "no second, empty snapshot after the signal";
  EXPECT_GT(last_profile().stacks.total_samples(), 0u);
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, RotatingOutputKeepsOnlyTheLastProfile) {
  auto agent = start_agent(
      {"-c", "-d", "1", "-f", "99", "--rotating-output", "--output-format", "collapsed,svg,pprof"});
  ASSERT_TRUE(eventually([&] { return count_lines_with(agent_log(), "wrote ") >= 3; },
                         std::chrono::seconds(60)))
      << agent_log();
  stop_agent(*agent);
  EXPECT_EQ(files_ending_with(".col"), 1u);
  EXPECT_EQ(files_ending_with(".svg"), 1u);
  EXPECT_EQ(files_ending_with(".pb.gz"), 1u);
  EXPECT_TRUE(fs::exists(root_ / "out" / "last_profile.col"));
  EXPECT_TRUE(fs::exists(root_ / "out" / "last_flamegraph.svg"));
  EXPECT_TRUE(fs::exists(root_ / "out" / "last_profile.pb.gz"));
}

TEST_F(PerfAgentTest, PerfIsRestartedAfterItsIntervalAndKeepsProfiling) {
  auto program = spawn_workload(30);
  ASSERT_NE(program, nullptr);
  auto agent = start_agent({"-c", "-d", "1", "-f", "99", "--perf-restart-interval", "1"});
  ASSERT_TRUE(eventually([&] { return count_lines_with(agent_log(), "wrote ") >= 3; },
                         std::chrono::seconds(60)))
      << agent_log();
  stop_agent(*agent);
  EXPECT_GE(count_lines_with(agent_log(), "restarting perf record because it ran for 1 s"), 2)
      << agent_log();
  uint64_t burn = 0;
  for (const auto& entry : fs::directory_iterator(root_ / "out")) {
    if (entry.path().extension() != ".col" || fs::is_symlink(entry.path())) continue;
    auto profile = profile::read_collapsed(read_file(entry.path()).value_or(""));
    ASSERT_TRUE(profile.ok()) << entry.path();
    burn += samples_with(profile->stacks, "known_ratio", "burn");
  }
  EXPECT_GT(burn, 100u) << agent_log();
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, PerfThatCannotRestartIsRetriedAndReportedInTheProfile) {
  auto program = spawn_workload(60);
  ASSERT_NE(program, nullptr);
  fs::path broken = root_ / "perf-record-is-broken";
  auto agent = start_agent(
      {"-c", "-d", "1", "-f", "99", "--perf-restart-interval", "1", "--perf-path", FAKE_PERF},
      {"FAKE_PERF_RECORD_FAILS_IF=" + broken.string()});
  ASSERT_TRUE(eventually([&] { return count_lines_with(agent_log(), "wrote ") >= 1; },
                         std::chrono::seconds(60)))
      << agent_log();
  std::ofstream(broken).put('\n');
  ASSERT_TRUE(
      eventually([&] { return count_lines_with(agent_log(), "perf-fp is not running") >= 1; },
                 std::chrono::seconds(60)))
      << agent_log();
  fs::remove(broken);
  int written = count_lines_with(agent_log(), "wrote ");
  ASSERT_TRUE(eventually(
      [&] {
        return count_lines_with(agent_log(), "wrote ") > written + 1 &&
               samples_with(last_profile().stacks, "known_ratio", "burn") > 0;
      },
      std::chrono::seconds(60)))
      << "perf did not come back: " << agent_log();
  stop_agent(*agent);
  EXPECT_GE(count_lines_with(agent_log(), "could not restart perf record"), 1) << agent_log();
  bool reported = false;
  for (const auto& entry : fs::directory_iterator(root_ / "out")) {
    if (entry.path().extension() != ".col" || fs::is_symlink(entry.path())) continue;
    std::string text = read_file(entry.path()).value_or("");
    reported =
        reported || text.find("[Profiling perf: perf-fp is not running") != std::string::npos;
  }
  EXPECT_TRUE(reported) << "no profile says why it has no perf samples";
  expect_nothing_left_behind();
}

TEST_F(PerfAgentTest, DwarfAndSmartModesSeeBothFunctions) {
  for (const char* mode : {"dwarf", "smart"}) {
    auto program = spawn_workload(20);
    ASSERT_NE(program, nullptr);
    // One process only: perf script unwinds every dwarf sample, which is slow host-wide.
    CommandOutput agent = run_agent(
        {"-d", "2", "-f", "99", "--perf-mode", mode, "--pids", std::to_string(program->pid())});
    ASSERT_EQ(agent.status.code, 0) << mode << ": " << agent.stderr_text;
    profile::CollapsedProfile profile = last_profile();
    EXPECT_GT(samples_with(profile.stacks, "known_ratio", "hot_two"), 20u)
        << mode << ": " << agent.stderr_text;
    EXPECT_GT(samples_with(profile.stacks, "known_ratio", "hot_one"), 10u)
        << mode << ": " << agent.stderr_text;
    EXPECT_GT(samples_with(profile.stacks, "known_ratio", "_start"), 0u)
        << mode << ": dwarf unwinding reaches past main";
  }
  expect_nothing_left_behind();
}

}  // namespace
}  // namespace dormant

namespace dormant {
namespace {

using dormant::testing::eventually;
using dormant::testing::spawn_workload;

// --perf-use-cgroups with perf (cgroups named as perf -G takes them) and with eBPF (cgroup v2 ids).
class CgroupTargetTest : public PerfAgentTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    PerfAgentTest::SetUp();
    if (IsSkipped()) return;
    system_profiler_ = GetParam();
#if !DORMANT_WITH_EBPF
    if (system_profiler_ == "ebpf") GTEST_SKIP() << "this build has no eBPF sampler";
#endif
    auto layout = profilers::system::detect_cgroup_layout();
    auto hierarchy = !layout                      ? std::nullopt
                     : system_profiler_ == "perf" ? layout->perf_hierarchy()
                                                  : layout->unified;
    if (!hierarchy) GTEST_SKIP() << "no cgroup hierarchy for " << system_profiler_;
    hierarchy_ = hierarchy->mount_point;
    // A busy process outside every profiled cgroup: in the root cgroup, which is never picked.
    decoy_link_ = root_ / "decoy_busy";
    fs::create_symlink(KNOWN_RATIO, decoy_link_);
    decoy_ = spawn_workload(30, decoy_link_.string());
    std::ofstream(hierarchy_ / "cgroup.procs") << decoy_->pid();
  }
  void TearDown() override {
    decoy_.reset();
    PerfAgentTest::TearDown();
  }

  fs::path hierarchy_;
  fs::path decoy_link_;
  std::unique_ptr<Subprocess> decoy_;
};

TEST_P(CgroupTargetTest, BusyProcessInANewCgroupIsProfiledAndOthersAreNot) {
  ScopedCgroup cgroup(hierarchy_ / ("dormant-test-" + std::to_string(::getpid())));
  auto busy = spawn_workload(30);
  cgroup.add(busy->pid());
  CommandOutput agent = run_agent({"-d", "3", "-f", "199", "--perf-use-cgroups"});
  busy.reset();
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  EXPECT_GT(samples_with(profile.stacks, "known_ratio", "burn"), 100u) << agent.stderr_text;
  EXPECT_EQ(samples_with(profile.stacks, "decoy_busy", "burn"), 0u)
      << "a process outside the chosen cgroups was profiled";
  expect_nothing_left_behind();
}

TEST_P(CgroupTargetTest, DockerContainerStandInIsFoundRankedAndProfiled) {
  std::string id(64, 'a');
  for (size_t i = 0; i < id.size(); i += 7) id[i] = "0123456789abcdef"[i % 16];
  ScopedCgroup container(hierarchy_ / "system.slice" / ("docker-" + id + ".scope"));
  // The workload runs in a cgroup below the container's, which the pick of the container covers.
  ScopedCgroup inside(hierarchy_ / "system.slice" / ("docker-" + id + ".scope") / "payload");
  auto busy = spawn_workload(30);
  inside.add(busy->pid());
  CommandOutput agent = run_agent({"-d", "3", "-f", "199", "--perf-use-cgroups",
                                   "--perf-max-docker-containers", "1", "--perf-max-cgroups", "0"});
  busy.reset();
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "docker-" + id + ".scope"), 1) << agent.stderr_text;
  profile::CollapsedProfile profile = last_profile();
  EXPECT_GT(samples_with(profile.stacks, "known_ratio", "burn"), 100u) << agent.stderr_text;
  EXPECT_EQ(samples_with(profile.stacks, "decoy_busy", "burn"), 0u);
  // No docker state on this host: the short id names the container, as `docker ps` shows it.
  std::string short_id = id.substr(0, 12);
  profile.stacks.for_each([&](const profile::StackView& stack) {
    if (stack.comm == "known_ratio") {
      EXPECT_EQ(stack.container, short_id);
    }
  });
  EXPECT_EQ(profile.header["containers"], nlohmann::json::array({short_id}));
  expect_nothing_left_behind();
}

TEST_P(CgroupTargetTest, NothingQualifyingSkipsPerfInsteadOfProfilingTheHost) {
  fs::path log = root_ / "perf-calls.log";
  CommandOutput agent = run_agent(
      {"-d", "1", "--perf-use-cgroups", "--perf-max-cgroups", "0", "--perf-path", FAKE_PERF},
      {"FAKE_PERF_LOG=" + log.string()});
  EXPECT_EQ(agent.status.code, 0) << agent.stderr_text;
  EXPECT_EQ(count_lines_with(agent.stderr_text, "never falls back to the whole host"), 1)
      << agent.stderr_text;
  EXPECT_FALSE(fs::exists(log)) << "perf was run";
  EXPECT_EQ(count_lines_with(agent.stderr_text, "ebpf: sampling"), 0) << agent.stderr_text;
}

INSTANTIATE_TEST_SUITE_P(Profilers, CgroupTargetTest, ::testing::Values("perf", "ebpf"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace dormant
