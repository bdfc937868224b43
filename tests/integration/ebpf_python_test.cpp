// The eBPF sampler's Python frames (root): Debian's python3.11 running three functions 1:2:3
// through nested calls, a generator, sorted() calling back into Python and two threads, named
// as gProfiler names them, in one stack with the interpreter's native frames, in the ratio the
// program's own thread clocks measured in the same run; the same under
// each other CPython installed here (pyenv's 3.9 to 3.13, with a shared libpython) and under a
// copy of the interpreter only another mount namespace sees; a Python process started
// mid-session; and the limit on how many processes get Python frames.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ebpf_profiling.h"

#include "common/deadline.h"
#include "common/subprocess.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPython = "/usr/bin/python3.11";

std::unique_ptr<Subprocess> spawn_python(double seconds, const std::string& python = kPython) {
  SpawnOptions spawn;
  spawn.argv = {python, PYTHON_RATIO, std::to_string(seconds)};
  auto child = Subprocess::spawn(spawn);
  EXPECT_TRUE(child.ok()) << child.error().message();
  return child.ok() ? std::move(*child) : nullptr;
}

// The index of the first frame starting with `prefix`, or -1.
int frame_index(const std::vector<std::string_view>& frames, std::string_view prefix) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].starts_with(prefix)) return static_cast<int>(i);
  }
  return -1;
}

struct PythonShares {
  uint64_t total = 0;
  uint64_t named = 0;  // with at least one Python frame
  uint64_t alpha = 0, beta = 0, gamma = 0;
  uint64_t gamma_through_sorted = 0;  // gamma, then a native frame, then gamma_key
  uint64_t beta_through_generator = 0;
};

PythonShares shares_of(const profile::StackTable& table, const std::string& comm = "python3.11") {
  PythonShares shares;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != comm) return;
    auto frames = frames_of(table, stack);
    shares.total += stack.count;
    bool named = std::any_of(frames.begin(), frames.end(),
                             [](std::string_view f) { return f.ends_with("_[p]"); });
    shares.named += named ? stack.count : 0;
    int work = frame_index(frames, "work (");
    int alpha = frame_index(frames, "alpha (");
    int beta = frame_index(frames, "beta (");
    int gamma = frame_index(frames, "gamma (");
    if (work < 0) return;
    shares.alpha += alpha > work ? stack.count : 0;
    shares.beta += beta > work ? stack.count : 0;
    shares.gamma += gamma > work ? stack.count : 0;
    int key = frame_index(frames, "gamma_key (");
    if (gamma > work && key > gamma + 1 && frames[gamma + 1].ends_with("_[pn]")) {
      shares.gamma_through_sorted += stack.count;
    }
    if (beta > work && frame_index(frames, "beta_steps (") > beta) {
      shares.beta_through_generator += stack.count;
    }
  });
  std::cout << comm << ": " << shares.named << " of " << shares.total
            << " samples with Python frames; alpha " << shares.alpha << ", beta " << shares.beta
            << " (" << shares.beta_through_generator << " through the generator), gamma "
            << shares.gamma << " (" << shares.gamma_through_sorted << " through sorted)\n";
  return shares;
}

void print_some_stacks(const profile::StackTable& table, const std::string& comm = "python3.11") {
  int shown = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != comm || shown++ >= 3) return;
    std::string line;
    for (auto frame : frames_of(table, stack)) line += std::string(frame) + ";";
    std::cout << "  " << line << " " << stack.count << "\n";
  });
}

// python_ratio.py run to its end under the profiler: what was sampled, and the CPU seconds the
// program measured in each function.
struct RatioRun {
  PythonShares shares;
  std::map<std::string, double> spent;
  nlohmann::json facts;
};

// Runs `command` (python_ratio.py, less its arguments) for `seconds` of work, profiled from before
// its first instruction until the work is done, while the program sleeps on.
RatioRun run_ratio(std::vector<std::string> command, const std::string& comm, int seconds) {
  RatioRun run;
  std::string spent_file = std::filesystem::temp_directory_path() / "dormant-spent-XXXXXX";
  int fd = ::mkstemp(spent_file.data());
  EXPECT_GE(fd, 0);
  if (fd < 0) return run;
  ::close(fd);
  SpawnOptions spawn;
  spawn.argv = std::move(command);
  spawn.argv.push_back(std::to_string(seconds));
  spawn.argv.push_back(spent_file);
  spawn.held = true;
  auto python = Subprocess::spawn(spawn);
  EXPECT_TRUE(python.ok()) << python.error().message();
  if (!python.ok()) return run;
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*python)->pid()};
  auto table = profile_for(
      options, std::chrono::seconds(seconds) + 1s, [&] { EXPECT_TRUE((*python)->release().ok()); },
      &run.facts);
  std::cout << "header facts: " << run.facts.dump() << "\n";
  print_some_stacks(table, comm);
  run.shares = shares_of(table, comm);
  // Written when the work is done, well within the profile's second to spare.
  for (auto deadline = deadline_after(10s); SteadyClock::now() < deadline;) {
    std::ifstream in(spent_file);
    std::string name;
    double spent = 0;
    while (in >> name >> spent) run.spent[name] = spent;
    if (run.spent.size() == 3) break;
    run.spent.clear();
    std::this_thread::sleep_for(100ms);
  }
  std::filesystem::remove(spent_file);
  std::cout << comm << " measured: alpha " << run.spent["alpha"] << " s, beta " << run.spent["beta"]
            << " s, gamma " << run.spent["gamma"] << " s\n";
  return run;
}

// python_ratio.py's functions named, through sorted() and the generator, in the ratio the
// program measured: within 25%, beyond four standard deviations of sampling at 300 samples.
void expect_named_in_their_ratio(const RatioRun& run, uint64_t least_samples) {
  const PythonShares& shares = run.shares;
  EXPECT_EQ(run.facts["python"].value("processes", 0), 1);
  ASSERT_GT(shares.total, least_samples);
  EXPECT_GE(shares.named * 100, shares.total * 95);
  ASSERT_GT(shares.alpha, least_samples / 10);
  ASSERT_GT(run.spent.at("alpha"), 0.0);
  auto sampled = [&](uint64_t count) {
    return static_cast<double>(count) / static_cast<double>(shares.alpha);
  };
  auto measured = [&](const char* function) {
    return run.spent.at(function) / run.spent.at("alpha");
  };
  EXPECT_NEAR(sampled(shares.beta) / measured("beta"), 1.0, 0.25);
  EXPECT_NEAR(sampled(shares.gamma) / measured("gamma"), 1.0, 0.25);
  EXPECT_GE(shares.gamma_through_sorted * 10, shares.gamma * 9)
      << "sorted()'s native frames sit between gamma and the key it calls";
  EXPECT_GE(shares.beta_through_generator * 10, shares.beta * 9);
}

class EbpfPythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
  }
};

TEST_F(EbpfPythonTest, PythonFunctionsAreNamedInTheirRatioAmongTheInterpretersNativeFrames) {
  expect_named_in_their_ratio(run_ratio({kPython, PYTHON_RATIO}, "python3.11", 6), 2000);
}

TEST_F(EbpfPythonTest, AnInterpreterOnlyAnotherMountNamespaceSeesIsReadThroughItsMappings) {
  std::string hidden = std::filesystem::temp_directory_path() / "dormant-python-XXXXXX";
  ASSERT_NE(::mkdtemp(hidden.data()), nullptr);
  // The copy lives on a tmpfs mounted in the interpreter's own mount namespace only; it proves
  // it is running by writing outside it.
  std::string running = hidden + ".running";
  std::vector<std::string> command = {
      "unshare",
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      "mount -t tmpfs none \"$1\" && cp \"$2\" \"$1/python3.11\" && "
      "touch \"$1.running\" && "
      "exec \"$1/python3.11\" \"$3\" \"$4\" \"$5\"",
      "sh",
      hidden,
      kPython,
      PYTHON_RATIO};
  auto run = run_ratio(command, "python3.11", 4);
  EXPECT_TRUE(std::filesystem::exists(running));
  EXPECT_FALSE(std::filesystem::exists(hidden + "/python3.11")) << "not visible from here";
  std::filesystem::remove(running);
  std::filesystem::remove(hidden);
  expect_named_in_their_ratio(run, 1400);
}

TEST_F(EbpfPythonTest, APythonProcessStartedMidSessionIsNamedFromItsFirstSecond) {
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  std::unique_ptr<Subprocess> python;
  nlohmann::json facts;
  auto table = profile_for(
      options, 3s,
      [&] {
        std::this_thread::sleep_for(500ms);
        python = spawn_python(2);
      },
      &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  print_some_stacks(table);
  ASSERT_NE(python, nullptr);
  PythonShares shares = shares_of(table);
  ASSERT_GT(shares.total, 300u);
  EXPECT_GE(shares.named * 100, shares.total * 80);
  EXPECT_GT(shares.alpha, 0u);
}

TEST_F(EbpfPythonTest, ProcessesPastTheLimitKeepTheirNativeFramesAndAreCounted) {
  auto first = spawn_python(5);
  auto second = spawn_python(5);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  std::this_thread::sleep_for(500ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {first->pid(), second->pid()};
  options.ebpf.max_python_processes = 1;
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  EXPECT_EQ(facts["python"].value("processes", 0), 1);
  EXPECT_GE(facts["python"].value("over_limit", 0), 1);
  PythonShares shares = shares_of(table);
  EXPECT_GT(shares.named, shares.total / 4) << "one of the two is named";
  EXPECT_LT(shares.named, shares.total * 3 / 4) << "the other is not";
}

TEST_F(EbpfPythonTest, AHostileInterpretersCyclesAndHugeNamesCostBoundedWork) {
  SpawnOptions spawn;
  spawn.argv = {HOSTILE_PYTHON, "5"};
  auto hostile = Subprocess::spawn(spawn);
  ASSERT_TRUE(hostile.ok()) << hostile.error().message();
  std::this_thread::sleep_for(300ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*hostile)->pid()};
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  EXPECT_EQ(facts["python"].value("processes", 0), 1) << "it passes for CPython 3.11";
  uint64_t total = 0, with_python = 0;
  size_t most_python_frames = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "python3.11") return;
    total += stack.count;
    size_t python_frames = 0;
    for (auto frame : frames_of(table, stack)) {
      if (!frame.ends_with("_[p]")) continue;
      ++python_frames;
      EXPECT_EQ(frame, "[unknown Python frame]_[p]") << "its file name cannot be read";
    }
    with_python += python_frames > 0 ? stack.count : 0;
    most_python_frames = std::max(most_python_frames, python_frames);
  });
  std::cout << "hostile python3.11: " << with_python << " of " << total
            << " samples with Python frames, at most " << most_python_frames << " a stack\n";
  ASSERT_GT(total, 500u);
  EXPECT_GT(with_python, total / 2) << "the walk found the thread in the cycle";
  EXPECT_EQ(most_python_frames, 63u) << "the frame cycle is cut at the walk's bound";
}

// Each CPython installed here but Debian's: pyenv's, each with its libpython a shared library.
std::vector<std::string> other_installed_pythons() {
  std::vector<std::string> pythons;
  std::istringstream installed(PYTHON_INTERPRETERS);
  std::string python;
  while (std::getline(installed, python, ':')) {
    if (!python.empty() && python != kPython) pythons.push_back(python);
  }
  return pythons;
}

class EbpfPythonVersionTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
    if (!std::filesystem::exists(GetParam())) {
      GTEST_SKIP() << GetParam() << " was installed when this test was built, and is gone";
    }
  }
};

TEST_P(EbpfPythonVersionTest, PythonFunctionsAreNamedInTheirRatio) {
  std::string comm = std::filesystem::path(GetParam()).filename();
  expect_named_in_their_ratio(run_ratio({GetParam(), PYTHON_RATIO}, comm, 4), 1400);
}

// Named by version: "python3_12".
std::string version_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).filename();
  std::replace(name.begin(), name.end(), '.', '_');
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Installed, EbpfPythonVersionTest,
                         ::testing::ValuesIn(other_installed_pythons()), version_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EbpfPythonVersionTest);

}  // namespace
}  // namespace dormant::profilers::ebpf
