// The eBPF CPU sampler loaded into this kernel (root): it counts a known workload's stacks in the
// kernel, announces process images, reports drops, and leaves no BPF object or perf event behind.
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ebpf_profiling.h"
#include "tests/support/kernel_release.h"
#include "workload.h"

#include "common/atomic_file.h"
#include "common/procfs.h"
#include "common/subprocess.h"
#include "profilers/ebpf/cpu_sampler.h"
#include "profilers/ebpf/ebpf_profiler.h"
#include "profilers/ebpf/kernel_probes.h"
#include "profilers/ebpf/libbpf_log.h"
#include "profilers/system/cgroup_layout.h"

namespace dormant::profilers::ebpf {
namespace {

using namespace std::chrono_literals;
using dormant::testing::on_cpu_ns;
using dormant::testing::ran_for_cpu_seconds;
using dormant::testing::spawn_workload;

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

// A stack map's value: a depth and 127 frames.
constexpr uint64_t kStackBytes = sizeof(uint64_t) * (CpuSampler::kMaxStackDepth + 1);

// Kernel memory held by the stack maps this process has open (fdinfo's memlock), in bytes.
uint64_t stack_map_bytes() {
  const std::string stack_values = "value_size:\t" + std::to_string(kStackBytes) + "\n";
  uint64_t bytes = 0;
  auto fds = procfs::open_fds();
  if (!fds) return 0;
  for (const auto& fd : *fds) {
    if (fd.target != "anon_inode:bpf-map") continue;
    auto info = read_file("/proc/self/fdinfo/" + std::to_string(fd.fd));
    if (!info || info->find(stack_values) == std::string::npos) continue;
    size_t at = info->find("memlock:");
    if (at != std::string::npos) bytes += std::stoull(info->substr(at + 8));
  }
  return bytes;
}

// many_stacks for 4 s over 2^10 paths; null, with a failure recorded, when it cannot start.
std::unique_ptr<Subprocess> spawn_many_stacks() {
  SpawnOptions spawn;
  spawn.argv = {MANY_STACKS, "4", "10"};
  auto workload = Subprocess::spawn(spawn);
  EXPECT_TRUE(workload.ok()) << workload.error().message();
  return workload.ok() ? std::move(*workload) : nullptr;
}

class EbpfSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to load BPF programs";
  }
};

TEST_F(EbpfSamplerTest, CountsAWorkloadsStacksInTheKernelAndNamesItsProcess) {
  auto workload = spawn_workload(4);
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
    SamplerEvents events;
    events.on_image = [&](const ProcessImage& image) { images[image.pid] = image.comm; };
    auto polled = (*sampler)->poll_images(100ms, -1, events);
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

// About two thousand distinct stacks (2^10 paths, and the instructions of burn() they end in) in
// a stack map of 8192: each one is kept. (A stack-trace map of that size, which keeps a stack in
// the slot its hash picks, loses about one in nine to a slot already taken.) How many of them
// 1,500 samples reach depends on how the workload was scheduled (845-899 on an idle machine, 466
// on a loaded one); 300 is enough for the test to fail on a hash-slotted map, which would lose
// about 300^2 / (2 * 8192) = 5.5 of them, none with a chance of e^-5.5 = 0.4%.
TEST_F(EbpfSamplerTest, ThousandsOfDistinctStacksAreAllKeptWhileTheMapHasRoom) {
  auto workload = spawn_many_stacks();
  ASSERT_NE(workload, nullptr);
  CpuSamplerOptions options;
  options.frequency_hz = 999;
  options.pids = {workload->pid()};
  options.max_stacks = 8192;
  auto sampler = CpuSampler::make(options);
  ASSERT_TRUE(sampler.ok()) << sampler.error().message();
  // Its 4 s may be few on a loaded machine: 1.5 s of its CPU time, about 1,500 samples.
  ASSERT_TRUE(ran_for_cpu_seconds(workload->pid(), 1.5)) << "the workload did not run";
  std::set<std::vector<uint64_t>> distinct;
  uint64_t samples = 0, lost = 0;
  auto drained = (*sampler)->drain([&](const CountedStack& stack) {
    samples += stack.count;
    if (stack.user_lost) lost += stack.count;
    distinct.emplace(stack.user.begin(), stack.user.end());
  });
  ASSERT_TRUE(drained.ok()) << drained.error().message();
  SamplerDrops drops = (*sampler)->take_drops();
  std::cout << samples << " samples in " << distinct.size() << " distinct user stacks, " << lost
            << " without their user stack; " << drops.stacks_full << " stacks past the map\n";
  EXPECT_GE(distinct.size(), 300u) << "2^10 paths, sampled over 1.5 s of their CPU at 999 Hz";
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(drops.total(), 0u);
}

// Two processes of many stacks sampled at 999 Hz while the test drains as fast as it can: every
// sample counted while a drain runs lands in the other set of maps, so each one comes out with
// its stack, and none is dropped.
TEST_F(EbpfSamplerTest, DrainingWhileSamplesPourInLosesNoStack) {
  std::vector<std::unique_ptr<Subprocess>> workloads;
  CpuSamplerOptions options;
  options.frequency_hz = 999;
  for (int i = 0; i < 2; ++i) {
    workloads.push_back(spawn_many_stacks());
    ASSERT_NE(workloads.back(), nullptr);
    options.pids.push_back(workloads.back()->pid());
  }
  auto sampler = CpuSampler::make(options);
  ASSERT_TRUE(sampler.ok()) << sampler.error().message();
  uint64_t samples = 0, lost = 0, without_user_stack = 0;
  int drains = 0;
  for (auto until = SteadyClock::now() + 3s; SteadyClock::now() < until; ++drains) {
    auto drained = (*sampler)->drain([&](const CountedStack& stack) {
      samples += stack.count;
      if (stack.user_lost || stack.kernel_lost) lost += stack.count;
      if (stack.user.empty()) without_user_stack += stack.count;
    });
    ASSERT_TRUE(drained.ok()) << drained.error().message();
  }
  SamplerDrops drops = (*sampler)->take_drops();
  std::cout << drains << " drains in 3 s took " << samples << " samples, " << lost
            << " without their stack, " << without_user_stack << " in the kernel only; "
            << drops.total() << " dropped\n";
  EXPECT_GE(drains, 20);
  EXPECT_GE(samples, 1000u);
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(drops.total(), 0u);
}

// A counts map of one entry: each set's turn counts one stack, and the stacks of the samples that
// found no room are stored all the same (a stack is stored before its count). The drain frees
// those too, so every turn's counted stack finds room in a stack map of 64; were they kept, the
// map would be full of them from the second turn on.
TEST_F(EbpfSamplerTest, StacksOfSamplesTheCountsMapRefusedAreFreedByTheDrain) {
  auto workload = spawn_many_stacks();
  ASSERT_NE(workload, nullptr);
  CpuSamplerOptions options;
  options.frequency_hz = 999;
  options.pids = {workload->pid()};
  options.max_counted = 1;
  options.max_stacks = 64;
  auto sampler = CpuSampler::make(options);
  ASSERT_TRUE(sampler.ok()) << sampler.error().message();
  int turns_with_a_stack = 0, turns_with_a_lost_stack = 0;
  for (int drain = 0; drain < 8; ++drain) {
    std::this_thread::sleep_for(250ms);
    auto drained = (*sampler)->drain([&](const CountedStack& stack) {
      if (stack.user_lost) ++turns_with_a_lost_stack;
      if (!stack.user.empty()) ++turns_with_a_stack;
    });
    ASSERT_TRUE(drained.ok()) << drained.error().message();
  }
  SamplerDrops drops = (*sampler)->take_drops();
  std::cout << turns_with_a_stack << " of 8 turns counted a stack, " << turns_with_a_lost_stack
            << " lost theirs; " << drops.counts_full << " samples found the counts map full, "
            << drops.stacks_full << " a stack map\n";
  EXPECT_GE(turns_with_a_stack, 7) << "the first drain may come before the first sample";
  EXPECT_EQ(turns_with_a_lost_stack, 0);
  EXPECT_GT(drops.counts_full, 0u);
}

// The verifier takes hash maps that allocate as they fill in perf_event programs from 6.1 on:
// there the probe must say yes (a backport may make an older kernel say yes as well).
TEST_F(EbpfSamplerTest, TheVerifierProbeFindsMapsThatAllocateAsTheyFillFromLinux61) {
  auto version = running_kernel_version();
  if (!version || *version < KernelVersion{6, 1}) {
    GTEST_SKIP() << "before 6.1 the answer depends on what the distribution backported";
  }
  auto accepted = perf_event_programs_accept_unallocated_maps();
  ASSERT_TRUE(accepted.ok()) << accepted.error().message();
  EXPECT_TRUE(*accepted);
  EXPECT_EQ(kernel_objects(), 0) << "the probe's map and program are closed";
}

// From 6.1 the hash maps hold memory for the entries they have, not for all they may have: 40 MB
// of kernel memory at the default sizes, most of it for two maps of 16,384 stacks of 1 kB.
TEST_F(EbpfSamplerTest, TheMapsTakeKernelMemoryAsStacksComeNotAllAtLoad) {
  auto version = running_kernel_version();
  if (!version || *version < KernelVersion{6, 4}) {
    GTEST_SKIP() << "fdinfo shows what a map holds from 6.4; before, what it may hold at most";
  }
  SpawnOptions spawn;
  spawn.argv = {MANY_STACKS, "2", "10"};
  auto workload = Subprocess::spawn(spawn);
  ASSERT_TRUE(workload.ok()) << workload.error().message();
  uint64_t before = stack_map_bytes();
  CpuSamplerOptions options;
  options.frequency_hz = 999;
  options.pids = {(*workload)->pid()};
  auto sampler = CpuSampler::make(options);
  ASSERT_TRUE(sampler.ok()) << sampler.error().message();
  uint64_t loaded = stack_map_bytes() - before;
  auto waited = (*workload)->wait();
  ASSERT_TRUE(waited.ok()) << waited.error().message();
  uint64_t sampled = stack_map_bytes() - before;
  std::set<std::vector<uint64_t>> stacks;
  ASSERT_TRUE((*sampler)
                  ->drain([&](const CountedStack& stack) {
                    stacks.emplace(stack.user.begin(), stack.user.end());
                    stacks.emplace(stack.kernel.begin(), stack.kernel.end());
                  })
                  .ok());
  stacks.erase(std::vector<uint64_t>());
  std::cout << "stack maps hold " << loaded / 1024 << " kB once loaded, " << sampled / 1024
            << " kB with " << stacks.size() << " stacks in them\n";
  EXPECT_LT(loaded, options.max_stacks * kStackBytes / 4) << "the stack maps were preallocated";
  EXPECT_GE(stacks.size(), 100u) << "2 s of 2^10 paths at 999 Hz";
  // An entry is a little larger than its value: that covers the stacks stored before `loaded`.
  EXPECT_GE(sampled - loaded, stacks.size() * kStackBytes);
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

TEST_F(EbpfSamplerTest, TheKnownWorkloadComesOutInItsRatioWithEveryFrameNamed) {
  auto workload = spawn_workload(7);
  ASSERT_NE(workload, nullptr);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 499;  // enough samples for the ratio to be known within 5%
  options.target.pids = {workload->pid()};
  profile::StackTable table = profile_for(options, 6s);
  uint64_t one = 0, two = 0, total = 0, named = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "known_ratio") return;
    auto frames = frames_of(table, stack);
    total += stack.count;
    one += has_frame(frames, "hot_one") ? stack.count : 0;
    two += has_frame(frames, "hot_two") ? stack.count : 0;
    bool all_named = has_frame(frames, "main");
    for (std::string_view frame : frames) {
      if (frame.starts_with("[") || frame.find("known_ratio)") != std::string_view::npos) {
        all_named = false;
      }
    }
    named += all_named ? stack.count : 0;
  });
  double ratio = static_cast<double>(two) / static_cast<double>(std::max<uint64_t>(one, 1));
  std::cout << "known_ratio by eBPF: hot_two " << two << ", hot_one " << one << ", ratio " << ratio
            << "; " << named << " of " << total << " samples fully named\n";
  EXPECT_NEAR(ratio, 2.0, 0.1);
  EXPECT_GE(named * 100, total * 99);
}

TEST_F(EbpfSamplerTest, APieProgramAndItsSharedLibraryResolveAndAStrippedOneGivesDsoFrames) {
  for (bool stripped : {false, true}) {
    SCOPED_TRACE(stripped ? "stripped" : "with symbols");
    std::string program = std::string(SYMBOL_TARGET) + (stripped ? "_stripped" : "");
    auto workload = spawn_workload(3, program);
    ASSERT_NE(workload, nullptr);
    EbpfProfilerOptions options;
    options.target.frequency_hz = 99;
    options.target.pids = {workload->pid()};
    profile::StackTable table = profile_for(options, 2s);
    uint64_t in_program = 0, in_library = 0, as_dso = 0, other = 0;
    std::string dso = "(" + std::filesystem::canonical(program).string() + ")";
    table.for_each([&](const profile::StackView& stack) {
      auto frames = frames_of(table, stack);
      if (has_frame(frames, "program_work")) {
        in_program += stack.count;
      } else if (has_frame(frames, "library_work")) {
        in_library += stack.count;
      } else if (has_frame(frames, dso)) {
        as_dso += stack.count;
      } else {
        other += stack.count;
      }
    });
    std::cout << program << ": program_work " << in_program << ", library_work " << in_library
              << ", " << dso << " " << as_dso << ", other " << other << "\n";
    EXPECT_GT(in_library, 20u) << "the shared library's function is found by its .dynsym";
    if (stripped) {
      EXPECT_EQ(in_program, 0u);
      EXPECT_GT(as_dso, 20u) << "a stripped program's own frames are named after it";
    } else {
      EXPECT_GT(in_program, 20u);
      EXPECT_EQ(as_dso, 0u);
    }
  }
}

// A process that execs a program of the same name is two images: each is symbolized from its own
// maps. (Told apart by name only, the second was looked up in the first one's maps.)
TEST_F(EbpfSamplerTest, AnExecIntoAProgramOfTheSameNameStartsANewImage) {
  auto directory =
      std::filesystem::temp_directory_path() / ("dormant-exec-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory / "first");
  std::filesystem::create_directories(directory / "second");
  std::filesystem::create_symlink(KNOWN_RATIO, directory / "first" / "worker");
  std::filesystem::create_symlink(SYMBOL_TARGET, directory / "second" / "worker");
  std::string first = (directory / "first" / "worker").string();
  std::string second = (directory / "second" / "worker").string();
  SpawnOptions spawn;
  spawn.argv = {first, "2", second, "2"};  // known_ratio, then exec symbol_target
  spawn.stdout_to = Redirect::null();
  auto workload = Subprocess::spawn(spawn);
  ASSERT_TRUE(workload.ok()) << workload.error().message();
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {(*workload)->pid()};
  profile::StackTable table = profile_for(options, 3500ms);
  std::filesystem::remove_all(directory);
  uint64_t before_exec = 0, after_exec = 0, unnamed = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "worker") return;
    auto frames = frames_of(table, stack);
    if (has_frame(frames, "hot_one") || has_frame(frames, "hot_two")) {
      before_exec += stack.count;
    } else if (has_frame(frames, "program_work") || has_frame(frames, "library_work")) {
      after_exec += stack.count;
    } else if (has_frame(frames, "main")) {
      unnamed += stack.count;  // in a function of the wrong program's name, or in none
    } else {
      unnamed += has_frame(frames, "[unknown]") ? stack.count : 0;
    }
  });
  std::cout << "worker before its exec: " << before_exec << " samples, after: " << after_exec
            << ", misnamed or unnamed: " << unnamed << "\n";
  EXPECT_GT(before_exec, 50u);
  EXPECT_GT(after_exec, 50u) << "the second program's frames were looked up in the first's maps";
  EXPECT_LE(unnamed * 20, before_exec + after_exec);
}

// A cgroup v2 of its own for the test's processes, removed at the end.
class TestCgroup {
 public:
  static std::optional<TestCgroup> make() {
    auto layout = system::detect_cgroup_layout();
    if (!layout || !layout->unified) return std::nullopt;
    TestCgroup cgroup;
    cgroup.path_ =
        layout->unified->mount_point / ("dormant-ebpf-test-" + std::to_string(::getpid()));
    std::error_code error;
    std::filesystem::create_directory(cgroup.path_, error);
    if (error) return std::nullopt;
    return cgroup;
  }
  TestCgroup(TestCgroup&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  ~TestCgroup() {
    if (path_.empty()) return;
    for (int i = 0; i < 100 && ::rmdir(path_.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(50ms);  // its last process is still being reaped
    }
  }
  uint64_t id() const { return inode(); }
  std::string procs() const { return (path_ / "cgroup.procs").string(); }

 private:
  TestCgroup() = default;
  uint64_t inode() const {
    struct stat info {};
    return ::stat(path_.c_str(), &info) == 0 ? info.st_ino : 0;
  }
  std::filesystem::path path_;
};

// A program the kernel's verifier refuses: the error says what could not be loaded and ends with
// the verifier's own explanation.
TEST_F(EbpfSamplerTest, AProgramTheVerifierRefusesIsExplainedInItsOwnWords) {
  bpf_object* object = bpf_object__open_file(VERIFIER_REJECT_OBJECT, nullptr);
  ASSERT_NE(object, nullptr) << VERIFIER_REJECT_OBJECT << ": " << std::strerror(errno);
  auto loaded = with_libbpf_log("load read_anywhere", [&] { return bpf_object__load(object); });
  bpf_object__close(object);
  ASSERT_FALSE(loaded.ok());
  const std::string& message = loaded.error().message();
  std::cout << message.substr(message.size() > 600 ? message.size() - 600 : 0) << "\n";
  EXPECT_EQ(loaded.error().kind(), ErrorKind::kBpf);
  EXPECT_TRUE(loaded.error().message().starts_with("cannot load read_anywhere: "));
  EXPECT_NE(loaded.error().message().find("libbpf said:"), std::string::npos);
  EXPECT_NE(loaded.error().message().find("invalid mem access"), std::string::npos)
      << "the verifier's reason, at the end of a log of several kB, is missing";
  EXPECT_GT(loaded.error().message().size(), 2048u) << "the program's log was meant to be long";
}

// Maps far too small for the workload: what does not fit is counted as dropped, never silently
// lost, and the profile says how many samples it lacks.
TEST_F(EbpfSamplerTest, SamplesPastTheMapSizesAreReportedAsDrops) {
  auto workload = spawn_workload(4);
  ASSERT_NE(workload, nullptr);
  EbpfProfilerOptions options;
  options.target.frequency_hz = 99;
  options.target.pids = {workload->pid()};
  options.ebpf.max_counted = 1;
  options.ebpf.max_stacks = 1;
  uint64_t ran_before = 0;  // once the program is loaded, not while it loads
  profile::StackTable table =
      profile_for(options, 2s, [&] { ran_before = on_cpu_ns(workload->pid()); });
  double ran_s = static_cast<double>(on_cpu_ns(workload->pid()) - ran_before) / 1e9;
  uint64_t counted = 0, marked = 0, lost_stacks = 0;
  size_t distinct = 0;
  table.for_each([&](const profile::StackView& stack) {
    auto frames = frames_of(table, stack);
    if (has_frame(
            frames,
            "[Profiling ebpf: samples not counted, the counts map was full or out of memory]")) {
      marked += stack.count;
      return;
    }
    ++distinct;
    counted += stack.count;
    lost_stacks += has_frame(frames, "[lost user stack]") ? stack.count : 0;
  });
  std::cout << "counts map of 1, stack map of 1: " << counted << " samples counted in " << distinct
            << " stacks (" << lost_stacks << " without their user stack), " << marked
            << " not counted\n";
  EXPECT_EQ(distinct, 1u);
  EXPECT_GT(marked, 0u);
  // One sample per 1/99 s the process ran, none of them unaccounted for (the time it ran while
  // the snapshot was taken is in `ran_s` too, hence the wider lower bound).
  double expected = ran_s * 99;
  EXPECT_GE(static_cast<double>(counted + marked), expected * 0.75);
  EXPECT_LE(static_cast<double>(counted + marked), expected * 1.1);
}

// 100 processes of about 50 ms each, started by a shell in a cgroup of their own while the
// profiler samples that cgroup: every sample not of the shell is one of theirs, and at least 95%
// of those carry their name (from the kernel) and their symbols (from maps read while they ran).
// Samples of their exec and exit carry kernel frames only, as in perf.
// A library loaded seconds into the session, after the process's maps were read: its frames are
// named all the same (the snapshot reads the maps again for a stack whose innermost frame is in
// none of them).
TEST_F(EbpfSamplerTest, ALibraryLoadedSecondsIntoTheSessionIsNamed) {
  SpawnOptions spawn;
  spawn.argv = {LATE_DLOPEN, "2", "6", FIXTURE_LIB};
  auto program = Subprocess::spawn(spawn);
  ASSERT_TRUE(program.ok()) << program.error().message();
  EbpfProfilerOptions options;
  options.target.frequency_hz = 199;
  options.target.pids = {(*program)->pid()};
  profile::StackTable table = profile_for(options, 5s);
  uint64_t in_library = 0, unnamed = 0;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm != "late_dlopen") return;
    auto frames = frames_of(table, stack);
    if (has_frame(frames, "fixture_library_work")) in_library += stack.count;
    // "[unknown]": its mapping was never read; "(libperf_fixture_lib.so)": nor its symbols.
    if (!frames.empty() && (frames.back() == "[unknown]" ||
                            frames.back().find("perf_fixture_lib") != std::string_view::npos)) {
      unnamed += stack.count;
    }
  });
  std::cout << "late dlopen: " << in_library << " samples named in the library, " << unnamed
            << " not\n";
  EXPECT_GT(in_library, 300u) << "about 3 s at 199 Hz";
  EXPECT_EQ(unnamed, 0u);
}

TEST_F(EbpfSamplerTest, ShortLivedProcessesKeepTheirNameAndSymbols) {
  auto cgroup = TestCgroup::make();
  if (!cgroup) GTEST_SKIP() << "no cgroup v2 hierarchy to make a test cgroup in";
  EbpfProfilerOptions options;
  options.target.frequency_hz = 99;
  options.cgroup_ids = {cgroup->id()};
  profile::StackTable table = profile_for(options, 0ms, [&] {
    std::string script =
        "echo $$ > " + cgroup->procs() + " && for i in $(seq 100); do " KNOWN_RATIO " 0.05; done";
    auto run = run_command({"sh", "-c", script}, deadline_after(120s));
    ASSERT_TRUE(run.ok() && run->status.success()) << (run.ok() ? run->stderr_text : "");
  });
  // Symbolized: no "[unknown]" or "[lost user stack]" frame. Frames of the dynamic loader are
  // "(ld-linux-x86-64.so.2)" for want of symbols there, as in the perf path.
  uint64_t theirs = 0, named = 0, with_symbols = 0, burning = 0;
  std::set<std::string, std::less<>> outsiders;
  table.for_each([&](const profile::StackView& stack) {
    if (stack.comm == "sh" || stack.comm == "seq") return;  // the launcher, and its forks
    theirs += stack.count;
    if (stack.comm != "known_ratio") outsiders.emplace(stack.comm);
    if (stack.comm != "known_ratio") return;
    named += stack.count;
    auto frames = frames_of(table, stack);
    with_symbols += std::none_of(frames.begin(), frames.end(),
                                 [](std::string_view frame) { return frame.starts_with("["); })
                        ? stack.count
                        : 0;
    burning += has_frame(frames, "burn") ? stack.count : 0;
  });
  std::cout << "100 short-lived processes: " << theirs << " samples, " << named
            << " under their name, " << with_symbols << " of those symbolized (" << burning
            << " in burn())\n";
  EXPECT_GT(theirs, 200u) << "100 x 50 ms at 99 Hz";
  EXPECT_TRUE(outsiders.empty()) << "the cgroup filter let in " << *outsiders.begin();
  EXPECT_GE(named * 100, theirs * 95);
  EXPECT_GE(with_symbols * 100, theirs * 95);
}

}  // namespace
}  // namespace dormant::profilers::ebpf
