// The eBPF sampler's Python frames (root): Debian's python3.11 running three functions 1:2:3
// through nested calls, a generator, sorted() calling back into Python and two threads, named
// as gProfiler names them, in one stack with the interpreter's native frames; a Python process
// started mid-session; and the limit on how many processes get Python frames.
#include <iostream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ebpf_profiling.h"

#include "common/subprocess.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;

constexpr const char* kPython = "/usr/bin/python3.11";

std::unique_ptr<Subprocess> spawn_python(double seconds) {
  SpawnOptions spawn;
  spawn.argv = {kPython, PYTHON_RATIO, std::to_string(seconds)};
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

PythonShares shares_of(const profile::StackTable& table, int pid) {
  PythonShares shares;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "python3.11") return;
    (void)pid;
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
  std::cout << "python3.11: " << shares.named << " of " << shares.total
            << " samples with Python frames; alpha " << shares.alpha << ", beta " << shares.beta
            << " (" << shares.beta_through_generator << " through the generator), gamma "
            << shares.gamma << " (" << shares.gamma_through_sorted << " through sorted)\n";
  return shares;
}

void print_some_stacks(const profile::StackTable& table) {
  int shown = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "python3.11" || shown++ >= 3) return;
    std::string line;
    for (auto frame : frames_of(table, stack)) line += std::string(frame) + ";";
    std::cout << "  " << line << " " << stack.count << "\n";
  });
}

class EbpfPythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
  }
};

TEST_F(EbpfPythonTest, PythonFunctionsAreNamedInTheirRatioAmongTheInterpretersNativeFrames) {
  auto python = spawn_python(8);
  ASSERT_NE(python, nullptr);
  std::this_thread::sleep_for(500ms);  // past the interpreter's start-up
  EbpfProfilerOptions options;
  options.frequency_hz = 499;
  options.pids = {python->pid()};
  nlohmann::json facts;
  auto table = profile_for(options, 6s, {}, &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  print_some_stacks(table);
  PythonShares shares = shares_of(table, python->pid());
  EXPECT_EQ(facts["python"].value("processes", 0), 1);
  ASSERT_GT(shares.total, 1000u);
  EXPECT_GE(shares.named * 100, shares.total * 95);
  ASSERT_GT(shares.alpha, 100u);
  // Two threads take turns at the GIL: the shares vary more between runs than sampling alone
  // would make them.
  EXPECT_NEAR(static_cast<double>(shares.beta) / static_cast<double>(shares.alpha), 2.0, 0.5);
  EXPECT_NEAR(static_cast<double>(shares.gamma) / static_cast<double>(shares.alpha), 3.0, 0.75);
  EXPECT_GE(shares.gamma_through_sorted * 10, shares.gamma * 9)
      << "sorted()'s native frames sit between gamma and the key it calls";
  EXPECT_GE(shares.beta_through_generator * 10, shares.beta * 9);
}

TEST_F(EbpfPythonTest, APythonProcessStartedMidSessionIsNamedFromItsFirstSecond) {
  EbpfProfilerOptions options;
  options.frequency_hz = 499;
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
  PythonShares shares = shares_of(table, python->pid());
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
  options.frequency_hz = 199;
  options.pids = {first->pid(), second->pid()};
  options.max_python_processes = 1;
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  EXPECT_EQ(facts["python"].value("processes", 0), 1);
  EXPECT_GE(facts["python"].value("over_limit", 0), 1);
  PythonShares shares = shares_of(table, 0);
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
  options.frequency_hz = 499;
  options.pids = {(*hostile)->pid()};
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

}  // namespace
}  // namespace dormant::profilers::ebpf
