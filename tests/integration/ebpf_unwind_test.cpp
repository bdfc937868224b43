// The eBPF sampler's walk by unwind tables (root): whole stacks of a program built without frame
// pointers whose hot functions run under glibc's qsort, of its stripped copy, and of a copy only
// another mount namespace can see; and what frame pointers alone get of the same program.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include "ebpf_profiling.h"
#include "workload.h"

#include "common/subprocess.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;
using dormant::testing::spawn_workload;

// The samples of `comm` in a profile: how many, how many reach `root`, and those of each spinner.
struct Reach {
  uint64_t total = 0;
  uint64_t reaching_root = 0;
  uint64_t alpha = 0, beta = 0, gamma = 0;
  double share_reaching_root() const {
    return total == 0 ? 0 : static_cast<double>(reaching_root) / static_cast<double>(total);
  }
};

Reach reach_of(const profile::StackTable& table, std::string_view comm,
               const std::function<bool(std::string_view)>& is_root) {
  Reach reach;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != comm) return;
    auto frames = frames_of(table, stack);
    reach.total += stack.count;
    if (std::any_of(frames.begin(), frames.end(), is_root)) reach.reaching_root += stack.count;
    reach.alpha += has_frame(frames, "spin_alpha") ? stack.count : 0;
    reach.beta += has_frame(frames, "spin_beta") ? stack.count : 0;
    reach.gamma += has_frame(frames, "spin_gamma") ? stack.count : 0;
  });
  std::cout << comm << ": " << reach.reaching_root << " of " << reach.total
            << " samples reach the root; spinners " << reach.alpha << " : " << reach.beta << " : "
            << reach.gamma << "\n";
  return reach;
}

bool is_main(std::string_view frame) { return frame == "main"; }
bool is_libc_start(std::string_view frame) { return frame.starts_with("__libc_start_main"); }

EbpfProfilerOptions profile_pid(int pid, bool by_tables) {
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;
  options.target.pids = {pid};
  options.ebpf.walk_by_tables = by_tables;
  return options;
}

class EbpfUnwindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
  }
};

TEST_F(EbpfUnwindTest, WithoutFramePointersTheTablesReachMainThroughGlibcsCallback) {
  auto workload = spawn_workload(8, NO_FRAME_POINTERS);
  ASSERT_NE(workload, nullptr);
  nlohmann::json facts;
  auto table = profile_for(profile_pid(workload->pid(), true), 6s, {}, &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  ASSERT_EQ(facts.value("unwinding", ""), "tables") << facts.dump();
  Reach reach = reach_of(table, "no_frame_pointe", is_main);  // the comm: 15 bytes
  ASSERT_GT(reach.total, 1000u);
  EXPECT_GE(reach.share_reaching_root(), 0.97);
  // Every function the samples land in is named, and in the ratio they spin.
  ASSERT_GT(reach.alpha, 100u);
  EXPECT_GE(reach.alpha + reach.beta + reach.gamma, reach.total * 9 / 10);
  EXPECT_NEAR(static_cast<double>(reach.beta) / static_cast<double>(reach.alpha), 2.0, 0.3);
  EXPECT_NEAR(static_cast<double>(reach.gamma) / static_cast<double>(reach.alpha), 3.0, 0.45);
  EXPECT_GT(facts["unwind_tables"].value("frames_by_table", 0), reach.total);
  EXPECT_GE(facts["unwind_tables"].value("files_loaded", 0), 2) << "the program and libc";
}

TEST_F(EbpfUnwindTest, FramePointersAloneStopInsideGlibc) {
  auto workload = spawn_workload(5, NO_FRAME_POINTERS);
  ASSERT_NE(workload, nullptr);
  nlohmann::json facts;
  auto table = profile_for(profile_pid(workload->pid(), false), 3s, {}, &facts);
  EXPECT_EQ(facts.value("unwinding", ""), "frame pointers") << facts.dump();
  Reach reach = reach_of(table, "no_frame_pointe", is_main);
  ASSERT_GT(reach.total, 500u);
  EXPECT_LE(reach.share_reaching_root(), 0.2) << "what the tables are for";
}

TEST_F(EbpfUnwindTest, AStrippedProgramIsWalkedByItsEhFrame) {
  auto workload = spawn_workload(6, NO_FRAME_POINTERS "_stripped");
  ASSERT_NE(workload, nullptr);
  auto table = profile_for(profile_pid(workload->pid(), true), 4s);
  Reach reach = reach_of(table, "no_frame_pointe", is_libc_start);
  ASSERT_GT(reach.total, 1000u);
  EXPECT_GE(reach.share_reaching_root(), 0.97);
}

TEST_F(EbpfUnwindTest, AProgramOnlyAnotherMountNamespaceSeesIsReadThroughItsMappings) {
  std::string hidden = std::filesystem::temp_directory_path() / "dormant-unwind-XXXXXX";
  ASSERT_NE(::mkdtemp(hidden.data()), nullptr);
  // The copy lives on a tmpfs mounted in the program's own mount namespace only.
  SpawnOptions spawn;
  spawn.argv = {"unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                "mount -t tmpfs none \"$1\" && cp \"$2\" \"$1/hidden_program\" && "
                "exec \"$1/hidden_program\" 7",
                "sh",
                hidden,
                NO_FRAME_POINTERS};
  auto workload = Subprocess::spawn(spawn);
  ASSERT_TRUE(workload.ok()) << workload.error().message();
  std::this_thread::sleep_for(500ms);  // until it runs the copy
  ASSERT_FALSE(std::filesystem::exists(hidden + "/hidden_program")) << "not visible from here";
  auto table = profile_for(profile_pid((*workload)->pid(), true), 4s);
  Reach reach = reach_of(table, "hidden_program", is_main);
  std::filesystem::remove(hidden);
  ASSERT_GT(reach.total, 1000u);
  EXPECT_GE(reach.share_reaching_root(), 0.97);
  EXPECT_GT(reach.alpha, 0u) << "named from the file the process maps";
}

TEST_F(EbpfUnwindTest, AFileLargerThanTheTablesBoundIsWalkedByFramePointerAndCounted) {
  auto workload = spawn_workload(5, NO_FRAME_POINTERS);
  ASSERT_NE(workload, nullptr);
  EbpfProfilerOptions options = profile_pid(workload->pid(), true);
  options.ebpf.unwind_table_bytes = 16 << 10;  // the program's table fits; libc's does not
  nlohmann::json facts;
  auto table = profile_for(options, 3s, {}, &facts);
  std::cout << "header facts: " << facts.dump() << "\n";
  EXPECT_GE(facts["unwind_tables"].value("files_without_room", 0), 1) << facts.dump();
  EXPECT_LE(facts["unwind_tables"].value("kernel_bytes", 1 << 30), 16 << 10);
  Reach reach = reach_of(table, "no_frame_pointe", is_main);
  ASSERT_GT(reach.total, 500u);
  EXPECT_GT(reach.alpha + reach.beta + reach.gamma, reach.total / 2) << "leaves still named";
}

}  // namespace
}  // namespace dormant::profilers::ebpf
