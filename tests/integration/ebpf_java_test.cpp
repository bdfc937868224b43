// Java 17 under the eBPF sampler (root), started with default flags (no frame pointers, no agent):
// its Java frames are walked through the JVM's code cache and interpreter and named from its own
// structures, gProfiler's way ("KnownRatio.alpha_[j]", inlined methods "_[i]"), in stacks from
// the pool thread's run() to the leaf; three methods in their 1:2:3 ratio, through() inlined into
// each, and a method first called mid-session named too.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
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

constexpr const char* kJava = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";

struct JavaShares {
  uint64_t total = 0;
  uint64_t from_thread_run = 0;  // with java.lang.Thread.run above everything else
  uint64_t alpha = 0, beta = 0, gamma = 0, delta = 0;
  uint64_t inlined = 0;     // samples with through() inlined into one of them
  uint64_t under_work = 0;  // a method's samples with work() above it
};

// The method `method` of KnownRatio, in any tier: "KnownRatio.alpha_[j]".
bool is_method(std::string_view frame, std::string_view method) {
  std::string prefix = "KnownRatio." + std::string(method) + "_[";
  return frame.starts_with(prefix) && frame.size() == prefix.size() + 2 && frame.back() == ']';
}

JavaShares shares_of(const profile::StackTable& table, const std::string& comm) {
  JavaShares shares;
  uint64_t shown = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != comm) return;
    auto frames = frames_of(table, stack);
    shares.total += stack.count;
    auto run = std::find(frames.begin(), frames.end(), "java.lang.Thread.run_[j]");
    if (run == frames.end())
      run = std::find(frames.begin(), frames.end(), "java.lang.Thread.run_[0]");
    if (run != frames.end()) shares.from_thread_run += stack.count;
    int work = -1;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (is_method(frames[i], "work")) work = static_cast<int>(i);
      if (frames[i] == "KnownRatio.through_[i]") shares.inlined += stack.count;
      for (auto [name, count] :
           {std::pair{"alpha", &shares.alpha}, std::pair{"beta", &shares.beta},
            std::pair{"gamma", &shares.gamma}, std::pair{"delta", &shares.delta}}) {
        if (!is_method(frames[i], name)) continue;
        *count += stack.count;
        if (work >= 0 && work < static_cast<int>(i)) shares.under_work += stack.count;
      }
    }
    if (stack.count > 20 && shown++ < 6) {
      std::cout << stack.count << " ";
      for (auto frame : frames) std::cout << frame << ";";
      std::cout << "\n";
    }
  });
  std::cout << comm << ": " << shares.total << " samples, " << shares.from_thread_run
            << " under Thread.run; alpha " << shares.alpha << ", beta " << shares.beta << ", gamma "
            << shares.gamma << ", delta " << shares.delta << " (" << shares.under_work
            << " under work, " << shares.inlined << " with through() inlined)\n";
  return shares;
}

// The one child of `pid`; 0: none.
int only_child(int pid) {
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) +
                         "/children");
  int child = 0;
  children >> child;
  return child;
}

class EbpfJavaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
    if (!fs::exists(kJava) || std::string(JAVA_CLASSES).empty()) {
      GTEST_SKIP() << "no JDK 17 here (" << kJava << ")";
    }
  }
};

TEST_F(EbpfJavaTest, JavaMethodsAreNamedInWholeStacksWithDefaultFlags) {
  SpawnOptions spawn;
  spawn.argv = {kJava, "-cp", JAVA_CLASSES, "KnownRatio", "8"};
  auto java = Subprocess::spawn(spawn);
  ASSERT_TRUE(java.ok()) << java.error().message();
  std::this_thread::sleep_for(1500ms);  // past the first compilations
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*java)->pid()};
  nlohmann::json facts;
  auto table = profile_for(options, 5s, {}, &facts);
  java->reset();
  std::cout << facts.dump() << "\n";
  JavaShares shares = shares_of(table, "java");
  ASSERT_GT(shares.total, 1500u);
  EXPECT_GE(shares.from_thread_run * 100, shares.total * 95) << "walked out of the Java frames";
  ASSERT_GT(shares.alpha, 150u);
  EXPECT_GE(shares.under_work * 100, (shares.alpha + shares.beta + shares.gamma) * 95);
  EXPECT_GE(shares.inlined * 100, (shares.alpha + shares.beta + shares.gamma) * 50);
  EXPECT_GT(shares.delta, 50u) << "a method first called mid-session";
  EXPECT_NEAR(static_cast<double>(shares.beta) / static_cast<double>(shares.alpha), 2.0, 0.5);
  EXPECT_NEAR(static_cast<double>(shares.gamma) / static_cast<double>(shares.alpha), 3.0, 0.75);
}

TEST_F(EbpfJavaTest, JvmsPastTheLimitKeepTheirNativeFramesAndAreCounted) {
  std::vector<std::unique_ptr<Subprocess>> jvms;
  for (int i = 0; i < 2; ++i) {
    SpawnOptions spawn;
    spawn.argv = {kJava, "-cp", JAVA_CLASSES, "KnownRatio", "6"};
    auto java = Subprocess::spawn(spawn);
    ASSERT_TRUE(java.ok()) << java.error().message();
    jvms.push_back(std::move(*java));
  }
  std::this_thread::sleep_for(1500ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {jvms[0]->pid(), jvms[1]->pid()};
  options.ebpf.max_runtime_processes = 1;
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  jvms.clear();
  EXPECT_EQ(facts["java"].value("processes", 0), 1) << facts.dump();
  EXPECT_EQ(facts["java"].value("over_limit", 0), 1) << facts.dump();
  EXPECT_NE(facts["java"]["reasons"].dump().find("max-processes-runtime-profiler"),
            std::string::npos);
  JavaShares shares = shares_of(table, "java");
  uint64_t named = shares.alpha + shares.beta + shares.gamma + shares.delta;
  EXPECT_GT(named, shares.total / 4) << "one of the two is named";
  EXPECT_LT(named, shares.total * 3 / 4) << "the other is not";
}

TEST_F(EbpfJavaTest, AJvmThatExitsMidSessionKeepsItsNames) {
  SpawnOptions spawn;
  spawn.argv = {kJava, "-cp", JAVA_CLASSES, "KnownRatio", "3.5"};
  auto java = Subprocess::spawn(spawn);
  ASSERT_TRUE(java.ok()) << java.error().message();
  std::this_thread::sleep_for(1500ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*java)->pid()};
  auto table = profile_for(options, 4s);  // it ends two seconds in
  auto status = (*java)->wait();
  ASSERT_TRUE(status.ok()) << status.error().message();
  JavaShares shares = shares_of(table, "java");
  ASSERT_GT(shares.total, 500u);
  EXPECT_GE((shares.alpha + shares.beta + shares.gamma + shares.delta) * 100, shares.total * 90);
}

TEST_F(EbpfJavaTest, AJvmInItsOwnNamespacesAsAnotherUserIsWalked) {
  // Its /tmp (its hsperfdata) is a tmpfs only its mount namespace sees; it is pid 1 in its pid
  // namespace and runs as nobody. The class is copied in: the checkout may be under /tmp.
  std::string class_file = std::string(JAVA_CLASSES) + "/KnownRatio.class";
  SpawnOptions spawn;
  spawn.argv = {"unshare",
                "--mount",
                "--pid",
                "--fork",
                "--propagation",
                "private",
                "sh",
                "-c",
                "exec 3<\"$1\" && mount -t tmpfs none /tmp && chmod 755 /tmp && "
                "cat <&3 >/tmp/KnownRatio.class && exec setpriv --reuid=65534 --regid=65534 "
                "--clear-groups \"$2\" -cp /tmp KnownRatio 6",
                "sh",
                class_file,
                kJava};
  auto java = Subprocess::spawn(spawn);
  ASSERT_TRUE(java.ok()) << java.error().message();
  std::this_thread::sleep_for(1500ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {only_child((*java)->pid())};  // unshare's child, its pid 1
  ASSERT_GT(options.target.pids.front(), 0);
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  java->reset();
  JavaShares shares = shares_of(table, "java");
  EXPECT_EQ(facts["java"]["processes"], 1) << facts.dump();
  ASSERT_GT(shares.total, 1000u);
  EXPECT_GE(shares.from_thread_run * 100, shares.total * 90);
  EXPECT_GE((shares.alpha + shares.beta + shares.gamma + shares.delta) * 100, shares.total * 90);
}

TEST_F(EbpfJavaTest, AHostileJvmsLiesCostBoundedWork) {
  SpawnOptions spawn;
  spawn.argv = {HOSTILE_JVM, "5"};
  auto hostile = Subprocess::spawn(spawn);
  ASSERT_TRUE(hostile.ok()) << hostile.error().message();
  std::this_thread::sleep_for(300ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {(*hostile)->pid()};
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  hostile->reset();
  EXPECT_EQ(facts["java"].value("processes", 0), 1) << "it passes for a HotSpot: " << facts.dump();
  uint64_t total = 0, unknown_method = 0;
  size_t longest = 0;
  table.for_each([&](const profile::StackView& stack) {
    total += stack.count;
    for (auto frame : frames_of(table, stack)) {
      longest = std::max(longest, frame.size());
      if (frame == "[unknown Java method]_[1]") unknown_method += stack.count;
    }
  });
  std::cout << "hostile JVM: " << total << " samples, " << unknown_method
            << " in its lying nmethods, longest frame " << longest << " bytes\n";
  EXPECT_GT(total, 1000u) << "four threads spinning for 3 s";
  EXPECT_GT(unknown_method, 100u) << "named as what they are: unreadable methods";
  EXPECT_LE(longest, 1100u);
}

TEST_F(EbpfJavaTest, AJvmTooOldToWalkKeepsItsNativeFramesWithTheReason) {
  SpawnOptions spawn;
  spawn.argv = {HOSTILE_JVM, "4", "old"};
  auto old = Subprocess::spawn(spawn);
  ASSERT_TRUE(old.ok()) << old.error().message();
  std::this_thread::sleep_for(300ms);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {(*old)->pid()};
  nlohmann::json facts;
  auto table = profile_for(options, 2s, {}, &facts);
  old->reset();
  EXPECT_EQ(facts["java"].value("processes", 0), 0) << facts.dump();
  EXPECT_EQ(facts["java"].value("not_walked", 0), 1) << facts.dump();
  EXPECT_NE(facts["java"]["reasons"].dump().find("CompiledMethod::_method (a JDK before 9?)"),
            std::string::npos)
      << facts.dump();
  EXPECT_GT(table.total_samples(), 100u) << "its samples keep their native frames";
}

}  // namespace
}  // namespace dormant::profilers::ebpf
