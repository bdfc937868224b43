// The eBPF CPU sampler loaded into this kernel (root): it counts a known workload's stacks in the
// kernel, announces process images, reports drops, and leaves no BPF object or perf event behind.
#include <iostream>
#include <map>
#include <thread>

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/procfs.h"
#include "common/subprocess.h"
#include "profilers/ebpf/cpu_sampler.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;

// Descriptors of BPF objects and perf events this process holds.
int kernel_objects() {
  int count = 0;
  auto fds = procfs::open_fds();
  if (!fds) return -1;
  for (const auto& fd : *fds) {
    count += fd.target.starts_with("anon_inode:bpf") || fd.target == "anon_inode:[perf_event]";
  }
  return count;
}

// Nanoseconds the process has run on a CPU.
uint64_t on_cpu_ns(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/schedstat");
  return text ? std::stoull(*text) : 0;
}

class EbpfSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
  }

  static std::unique_ptr<Subprocess> busy(int seconds) {
    SpawnOptions options;
    options.argv = {KNOWN_RATIO, std::to_string(seconds)};
    options.stdout_to = Redirect::null();
    auto child = Subprocess::spawn(options);
    EXPECT_TRUE(child.ok());
    return child.ok() ? std::move(*child) : nullptr;
  }
};

TEST_F(EbpfSamplerTest, CountsAWorkloadsStacksInTheKernelAndNamesItsProcess) {
  auto workload = busy(4);
  ASSERT_NE(workload, nullptr);
  CpuSamplerOptions options;
  options.frequency_hz = 99;
  options.pids = {workload->pid()};
  auto sampler = CpuSampler::make(options);
  ASSERT_TRUE(sampler.ok()) << sampler.error().message();
  EXPECT_GE((*sampler)->cpus(), 1);
  uint64_t ran_before = on_cpu_ns(workload->pid());

  std::map<int, std::string> images;
  for (auto until = SteadyClock::now() + 2s; SteadyClock::now() < until;) {
    auto polled = (*sampler)->poll_images(
        100ms, [&](const ProcessImage& image) { images[image.pid] = image.comm; });
    ASSERT_TRUE(polled.ok()) << polled.error().message();
  }
  double ran_s = static_cast<double>(on_cpu_ns(workload->pid()) - ran_before) / 1e9;
  uint64_t samples = 0, with_user_stack = 0, lost = 0;
  std::map<int, uint64_t> per_pid;
  auto drained = (*sampler)->drain([&](const CountedStack& stack) {
    samples += stack.count;
    per_pid[stack.pid] += stack.count;
    if (!stack.user.empty()) with_user_stack += stack.count;
    if (stack.user_lost || stack.kernel_lost) lost += stack.count;
  });
  ASSERT_TRUE(drained.ok()) << drained.error().message();

  std::cout << samples << " samples at 99 Hz of a process that ran " << ran_s << " s, "
            << with_user_stack << " with a user stack, event " << (*sampler)->event() << " on "
            << (*sampler)->cpus() << " CPUs\n";
  EXPECT_EQ(per_pid.size(), 1u) << "the pid filter let other processes in";
  // One sample per 1/99 s that the process ran, whatever share of a CPU it got.
  double expected = ran_s * 99;
  EXPECT_NEAR(static_cast<double>(per_pid[workload->pid()]), expected, expected * 0.2);
  EXPECT_EQ(images[workload->pid()], "known_ratio");
  EXPECT_GE(with_user_stack * 100, samples * 99) << with_user_stack << " of " << samples;
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ((*sampler)->take_drops().total(), 0u);

  uint64_t again = 0;
  ASSERT_TRUE((*sampler)->drain([&](const CountedStack& stack) { again += stack.count; }).ok());
  EXPECT_LT(again, samples) << "a drain empties the kernel's counts";
}

TEST_F(EbpfSamplerTest, NoBpfObjectOrPerfEventRemainsOnceDestroyed) {
  int before = kernel_objects();
  for (int round = 0; round < 3; ++round) {
    auto sampler = CpuSampler::make({});
    ASSERT_TRUE(sampler.ok()) << sampler.error().message();
    EXPECT_GT(kernel_objects(), before);
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE((*sampler)->drain([](const CountedStack&) {}).ok());
  }
  EXPECT_EQ(kernel_objects(), before);
}

}  // namespace
}  // namespace dormant::profilers::ebpf
