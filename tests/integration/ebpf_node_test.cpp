// Node 20 under the eBPF sampler (root): with --perf-basic-prof and
// --interpreted-frames-native-stack its JavaScript is named from the perf map it writes, in stacks
// that go from node::Start through V8's JIT and interpreter frames (V8 keeps frame pointers in
// them) to the leaf, three functions in the ratio of their CPU time; a node in its
// own mount and pid namespaces is named from the map in its own /tmp, under its own pid there.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ebpf_profiling.h"

#include "common/subprocess.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kNode = "/usr/bin/node";
// Node and its flags: a perf map with interpreted functions too, and no V8 log
// (isolate-*-v8.log, which --perf-basic-prof turns on) left in the working directory.
const std::vector<std::string> kNodeCommand = {
    kNode, "--perf-basic-prof", "--interpreted-frames-native-stack", "--logfile=/dev/null"};

struct NodeShares {
  uint64_t total = 0;
  uint64_t from_node_start = 0;  // with node::Start above everything else
  uint64_t alpha = 0, beta = 0, gamma = 0;
  uint64_t under_work = 0;  // a function's samples with work() above it
};

// Whether `frame` is V8's perf-map name of JavaScript function `function`: "JS:*spin file:1:14"
// (the tier's mark after "JS:").
bool is_js(std::string_view frame, std::string_view function) {
  if (!frame.starts_with("JS:") || frame.size() < 4) return false;
  frame.remove_prefix(4);
  return frame.starts_with(function) && frame.substr(function.size()).starts_with(" ");
}

NodeShares shares_of(const profile::StackTable& table) {
  NodeShares shares;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "node") return;
    auto frames = frames_of(table, stack);
    shares.total += stack.count;
    if (std::find(frames.begin(), frames.end(), "node::Start(int, char**)") != frames.end()) {
      shares.from_node_start += stack.count;
    }
    int work = -1;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (is_js(frames[i], "work")) work = static_cast<int>(i);
      for (auto [name, count] : {std::pair{"alpha", &shares.alpha}, std::pair{"beta", &shares.beta},
                                 std::pair{"gamma", &shares.gamma}}) {
        if (!is_js(frames[i], name)) continue;
        *count += stack.count;
        if (work >= 0 && work < static_cast<int>(i)) shares.under_work += stack.count;
      }
    }
  });
  std::cout << "node: " << shares.total << " samples, " << shares.from_node_start
            << " under node::Start; alpha " << shares.alpha << ", beta " << shares.beta
            << ", gamma " << shares.gamma << " (" << shares.under_work << " under work)\n";
  return shares;
}

// What node_ratio.js says it spent in alpha, beta and gamma over a stretch of time, from its
// report: "MS ALPHA_US BETA_US GAMMA_US" lines, cumulative CPU time. A profile's shares are held
// against what the program measured, not against 1:2:3: V8's tiers change a function's time per
// call while they compile.
struct Spent {
  double alpha = 0, beta = 0, gamma = 0;
};

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// From the last report at or before `from_ms` to the first at or after `to_ms`.
Spent spent_between(const fs::path& report, int64_t from_ms, int64_t to_ms) {
  std::ifstream lines(report);
  std::optional<Spent> first, last;
  bool ended = false;
  int64_t ms = 0;
  Spent line;
  while (!ended && lines >> ms >> line.alpha >> line.beta >> line.gamma) {
    if (!first || ms <= from_ms) first = line;
    last = line;
    ended = ms >= to_ms;
  }
  if (!first || !last) return {};
  Spent spent{last->alpha - first->alpha, last->beta - first->beta, last->gamma - first->gamma};
  std::cout << "node_ratio.js spent alpha " << spent.alpha / 1e3 << " ms, beta " << spent.beta / 1e3
            << " ms, gamma " << spent.gamma / 1e3 << " ms of CPU\n";
  return spent;
}

class EbpfNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
    if (!fs::exists(kNode)) GTEST_SKIP() << kNode << " is not installed";
    report_ =
        fs::temp_directory_path() / ("dormant-node-" + std::to_string(::getpid()) + ".report");
    fs::remove(report_);
  }
  void TearDown() override { fs::remove(report_); }

  // The profile's ratio of each function's samples to alpha's is the program's, within sampling
  // noise: five standard deviations of a ratio of counts. On a loaded machine the program runs in
  // the scheduler's slices, a few of its 2 ms loops each, and samples that come in runs of one
  // slice vary more than independent ones would (by 1.5 times, measured with two busy loops).
  static void expect_shares_as_spent(uint64_t alpha, uint64_t beta, uint64_t gamma,
                                     const Spent& spent) {
    ASSERT_GT(spent.alpha, 0) << "no report from node_ratio.js";
    auto expect_ratio = [&](uint64_t samples, double spent_in, const char* function) {
      double expected = spent_in / spent.alpha;
      double noise = expected * std::sqrt(1.0 / static_cast<double>(alpha) +
                                          1.0 / static_cast<double>(samples));
      EXPECT_NEAR(static_cast<double>(samples) / static_cast<double>(alpha), expected, 5 * noise)
          << function << " to alpha";
    };
    expect_ratio(beta, spent.beta, "beta");
    expect_ratio(gamma, spent.gamma, "gamma");
  }

  fs::path report_;
};

TEST_F(EbpfNodeTest, JavaScriptIsNamedFromNodesPerfMapInWholeStacks) {
  SpawnOptions spawn;
  spawn.argv = kNodeCommand;
  spawn.argv.insert(spawn.argv.end(), {NODE_RATIO, "7", report_.string()});
  auto node = Subprocess::spawn(spawn);
  ASSERT_TRUE(node.ok()) << node.error().message();
  std::string map = "/tmp/perf-" + std::to_string((*node)->pid()) + ".map";
  std::this_thread::sleep_for(1500ms);  // past V8's first compilations
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*node)->pid()};
  int64_t from = wall_ms();
  auto table = profile_for(options, 4s);
  Spent spent = spent_between(report_, from, wall_ms());
  node->reset();
  fs::remove(map);
  NodeShares shares = shares_of(table);
  ASSERT_GT(shares.total, 600u) << "4 s at 499 Hz: about 2,000 samples of a CPU to itself";
  EXPECT_GE(shares.from_node_start * 100, shares.total * 95) << "walked back out of the JIT code";
  ASSERT_GT(shares.alpha, 150u);
  EXPECT_GE(shares.under_work * 100, (shares.alpha + shares.beta + shares.gamma) * 95);
  EXPECT_GE((shares.alpha + shares.beta + shares.gamma) * 100, shares.total * 90);
  expect_shares_as_spent(shares.alpha, shares.beta, shares.gamma, spent);
}

TEST_F(EbpfNodeTest, ANodeInItsOwnMountAndPidNamespacesIsNamedFromItsOwnPerfMap) {
  // Its /tmp is a tmpfs only its mount namespace sees; it is pid 1 in its pid namespace.
  SpawnOptions spawn;
  spawn.argv = {"unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c",
                // The script is copied in: the checkout may itself be under /tmp.
                "script=$(cat \"$1\") && mount -t tmpfs none /tmp && "
                "printf '%s\\n' \"$script\" >/tmp/node_ratio.js && shift && "
                "exec \"$@\" /tmp/node_ratio.js 6",
                "sh", NODE_RATIO};
  spawn.argv.insert(spawn.argv.end(), kNodeCommand.begin(), kNodeCommand.end());
  auto node = Subprocess::spawn(spawn);
  ASSERT_TRUE(node.ok()) << node.error().message();
  std::this_thread::sleep_for(1500ms);
  EbpfProfilerOptions options;  // the whole host: the node's pid here is unshare's child's
  options.target.frequency_hz = 499;
  auto table = profile_for(options, 3s);
  node->reset();
  NodeShares shares = shares_of(table);
  ASSERT_GT(shares.total, 400u) << "3 s at 499 Hz: about 1,500 samples of a CPU to itself";
  EXPECT_GE((shares.alpha + shares.beta + shares.gamma) * 100, shares.total * 90);
}

// Node started with default flags writes no perf map: its JavaScript frames are told apart and
// named from V8's own objects ("JS:alpha /path/node_ratio.js:10": the function, its script, the
// line it starts on).
TEST_F(EbpfNodeTest, JavaScriptIsNamedFromV8sObjectsWithDefaultFlags) {
  SpawnOptions spawn;
  spawn.argv = {kNode, NODE_RATIO, "7", report_.string()};
  auto node = Subprocess::spawn(spawn);
  ASSERT_TRUE(node.ok()) << node.error().message();
  std::this_thread::sleep_for(1500ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*node)->pid()};
  nlohmann::json facts;
  int64_t from = wall_ms();
  auto table = profile_for(options, 4s, {}, &facts);
  Spent spent = spent_between(report_, from, wall_ms());
  node->reset();
  EXPECT_EQ(facts["javascript"].value("processes", 0), 1) << facts.dump();
  uint64_t total = 0, from_node_start = 0, under_work = 0;
  std::map<std::string, uint64_t> functions;
  std::string script = std::string(" ") + NODE_RATIO + ":";
  uint64_t shown = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "node") return;
    auto frames = frames_of(table, stack);
    total += stack.count;
    if (std::find(frames.begin(), frames.end(), "node::Start(int, char**)") != frames.end()) {
      from_node_start += stack.count;
    }
    bool in_work = false;
    for (std::string_view frame : frames) {
      for (const char* function : {"work", "alpha", "beta", "gamma", "spin"}) {
        std::string prefix = std::string("JS:") + function + script;
        if (!frame.starts_with(prefix)) continue;
        functions[std::string(function) + std::string(frame.substr(prefix.size()))] += stack.count;
        if (std::string_view(function) == "work") in_work = true;
        if (in_work && std::string_view(function) == "alpha") under_work += stack.count;
      }
    }
    if (stack.count > 30 && shown++ < 4) {  // the JavaScript end of the busiest stacks
      for (size_t i = frames.size() > 8 ? frames.size() - 8 : 0; i < frames.size(); ++i) {
        std::cout << frames[i] << ";";
      }
      std::cout << " " << stack.count << "\n";
    }
  });
  for (const auto& [function, count] : functions) std::cout << function << ": " << count << "\n";
  ASSERT_GT(total, 600u) << "4 s at 499 Hz: about 2,000 samples of a CPU to itself";
  EXPECT_GE(from_node_start * 100, total * 75) << "walked by frame pointer out of V8's frames";
  uint64_t alpha = functions["alpha10"], beta = functions["beta14"], gamma = functions["gamma18"];
  ASSERT_GT(alpha, 100u) << "alpha() starts on line 10 of " << NODE_RATIO;
  EXPECT_GE((alpha + beta + gamma) * 100, total * 85);
  EXPECT_GE(under_work * 100, alpha * 95);
  expect_shares_as_spent(alpha, beta, gamma, spent);
}

TEST_F(EbpfNodeTest, NodesPastTheRuntimeLimitKeepTheirNativeFramesAndAreCounted) {
  std::vector<std::unique_ptr<Subprocess>> nodes;
  for (int i = 0; i < 2; ++i) {
    SpawnOptions spawn;
    spawn.argv = {kNode, NODE_RATIO, "5"};
    auto node = Subprocess::spawn(spawn);
    ASSERT_TRUE(node.ok()) << node.error().message();
    nodes.push_back(std::move(*node));
  }
  std::this_thread::sleep_for(1000ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {nodes[0]->pid(), nodes[1]->pid()};
  options.ebpf.max_runtime_processes = 1;
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  nodes.clear();
  EXPECT_EQ(facts["javascript"].value("processes", 0), 1) << facts.dump();
  EXPECT_EQ(facts["javascript"].value("over_limit", 0), 1) << facts.dump();
  uint64_t total = 0, named = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "node") return;
    total += stack.count;
    auto frames = frames_of(table, stack);
    if (std::any_of(frames.begin(), frames.end(),
                    [](std::string_view frame) { return frame.starts_with("JS:alpha "); })) {
      named += stack.count;
    }
  });
  // alpha() has a sixth of a node's samples: a twelfth of both nodes' when one of them is named.
  EXPECT_GT(named, total / 24) << "one of the two is named";
  EXPECT_LT(named, total / 8) << "the other is not";
}

}  // namespace
}  // namespace dormant::profilers::ebpf
