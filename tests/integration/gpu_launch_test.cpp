// `dormant-agent gpu -- PROGRAM` on the fake CUDA stack (tests/fakes/cuda): libdormant_cupti.so
// injected into the fake CUDA program, its probes read by the agent's BPF programs, launches
// joined to their kernels. Needs root (uprobes); the fakes stand in for the GPU.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fake_cupti_state.h"
#include "tests/support/eventually.h"

#include "common/atomic_file.h"
#include "common/subprocess.h"
#include "profile/collapsed.h"

namespace dormant {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct GpuRun {
  ExitStatus status;
  std::string log;  // the agent's stderr
  json program;     // what the fake program says it launched
  profile::CollapsedProfile profile;
  uint64_t gpu_samples = 0;
  std::map<std::string, uint64_t> by_api;  // GPU samples under each API frame
};

struct Ran {
  ExitStatus status;
  std::string out;
  std::string err;
};

// Runs `argv` to its end (at most four minutes) with `env` added to the environment.
Ran run_program(std::vector<std::string> argv, std::vector<std::string> env) {
  SpawnOptions options;
  options.argv = std::move(argv);
  options.env = std::move(env);
  Ran ran;
  auto child = Subprocess::spawn(options);
  EXPECT_TRUE(child.ok()) << child.error().message();
  if (!child.ok()) return ran;
  EXPECT_TRUE(
      (*child)
          ->for_each_stdout_line([&](std::string_view line) { ran.out.append(line) += '\n'; },
                                 deadline_after(std::chrono::seconds(240)))
          .ok());
  auto status = (*child)->wait(deadline_after(std::chrono::seconds(60)));
  ran.status = status.ok() ? *status : (*child)->terminate(std::chrono::seconds(1));
  ran.err = (*child)->stderr_tail();
  return ran;
}

class GpuLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root: the GPU probes are uprobes";
    root_ = fs::temp_directory_path() /
            ("dormant-gpu-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  std::string program_output(std::string_view text) {
    auto at = text.rfind("{\"launches\"");
    return at == std::string_view::npos ? "{}"
                                        : std::string(text.substr(at, text.find('\n', at) - at));
  }

  // The agent's `gpu` way in with the fake program; the profile is read when one was written.
  GpuRun run(std::vector<std::string> agent_args, std::vector<std::string> program_args,
             std::vector<std::string> env = {}) {
    program_args.insert(program_args.begin(), FAKE_CUDA_DIR "/fake_cuda_app");
    return run_program_under_agent(std::move(agent_args), std::move(program_args), std::move(env));
  }

  // The agent's `gpu` way in with any program on the fake CUDA stack of `fake_dir` (CUDA 13's
  // or CUDA 12's).
  GpuRun run_program_under_agent(std::vector<std::string> agent_args,
                                 std::vector<std::string> program, std::vector<std::string> env,
                                 const char* fake_dir = FAKE_CUDA_DIR) {
    std::vector<std::string> argv = {DORMANT_AGENT, "gpu", "-o", (root_ / "out").string(),
                                     "-f",          "1000"};
    argv.insert(argv.end(), agent_args.begin(), agent_args.end());
    argv.push_back("--");
    argv.insert(argv.end(), program.begin(), program.end());
    env.push_back(std::string("LD_LIBRARY_PATH=") + fake_dir);
    Ran ran = run_program(std::move(argv), std::move(env));
    GpuRun result;
    result.status = ran.status;
    result.log = ran.err;
    result.program = json::parse(program_output(ran.out));
    read_profile(result);
    return result;
  }

  // The fake program launching in the background until the test ends, the library injected and
  // dormant; `name` keeps its files apart from another's. `executable`: the fake program under
  // another name (a link to it), for its frames to be told apart.
  std::unique_ptr<Subprocess> start_program(std::vector<std::string> args,
                                            std::vector<std::string> env,
                                            const std::string& name = "program",
                                            const fs::path& out = {},
                                            const fs::path& executable = FAKE_CUDA_DIR
                                            "/fake_cuda_app") {
    SpawnOptions options;
    options.argv = {executable.string(), "--until-file", (root_ / "stop").string()};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.env = std::move(env);
    options.env.insert(options.env.end(),
                       {"LD_LIBRARY_PATH=" FAKE_CUDA_DIR, "CUDA_INJECTION64_PATH=" CUPTI_LIBRARY,
                        "FAKE_CUPTI_STATE_FILE=" + (root_ / (name + ".state")).string()});
    options.stdout_to = out.empty() ? Redirect::null() : Redirect::file(out);
    auto program = Subprocess::spawn(options);
    EXPECT_TRUE(program.ok()) << program.error().message();
    if (!program.ok()) return nullptr;
    // Launching (the library mapped, the fake CUPTI's SIGUSR1 handler in place).
    EXPECT_TRUE(dormant::testing::eventually(
        [&] { return cupti_state((*program)->pid(), name) != ""; }, std::chrono::seconds(10)));
    return std::move(*program);
  }

  // What process `pid`'s fake CUPTI has on: "callbacks=C kinds=K buffers=B"; "" if it says
  // nothing (not started yet).
  std::string cupti_state(pid_t pid, const std::string& name = "program") {
    return dormant::testing::fake_cupti_state(pid, root_ / (name + ".state"));
  }

  // One `seconds` profile of the running processes `pids`, as `dormant-agent --pids` takes it.
  GpuRun profile_running(const std::vector<pid_t>& pids, int seconds) {
    fs::remove_all(root_ / "out");
    std::string listed;
    for (pid_t pid : pids) {
      if (!listed.empty()) listed += ',';
      listed += std::to_string(pid);
    }
    Ran ran = run_program({DORMANT_AGENT, "-o", (root_ / "out").string(), "-f", "1000", "-d",
                           std::to_string(seconds), "--gpu-mode", "gpu-only", "--pids", listed},
                          {});
    GpuRun result;
    result.status = ran.status;
    result.log = ran.err;
    read_profile(result);
    return result;
  }

  void read_profile(GpuRun& result) {
    if (!fs::exists(root_ / "out" / "last_profile.col")) return;
    std::ifstream file(root_ / "out" / "last_profile.col");
    std::stringstream text;
    text << file.rdbuf();
    auto parsed = profile::read_collapsed(text.str());
    EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message()) << "\n" << result.log;
    if (!parsed.ok()) return;
    result.profile = std::move(*parsed);
    const profile::StackTable& stacks = result.profile.stacks;
    stacks.for_each([&](const profile::StackView& stack) {
      if (stack.frame_ids.empty()) return;
      std::string_view leaf = stacks.string(stack.frame_ids.back());
      if (!leaf.starts_with("[GPU] ")) return;
      result.gpu_samples += stack.count;
      // [GPU n];…;API;[stream s] or [graph g];[GPU] kernel
      std::string api =
          stack.frame_ids.size() >= 3
              ? std::string(stacks.string(stack.frame_ids[stack.frame_ids.size() - 3]))
              : "";
      result.by_api[api] += stack.count;
    });
  }

  // The program's GPU time as samples at 1000 Hz.
  static double expected_samples(const json& program) {
    uint64_t ns = program.value("alpha_ns", 0ull) + program.value("beta_ns", 0ull) +
                  program.value("gamma_ns", 0ull) + program.value("copy_ns", 0ull);
    return static_cast<double>(ns) * 1000 / 1e9;
  }

  fs::path root_;
};

// Callers named "launch_site_*" or "[unknown]", with the GPU samples under each kind.
struct LaunchCallers {
  uint64_t named = 0;
  uint64_t unknown = 0;
};

LaunchCallers launch_callers(const profile::StackTable& stacks) {
  LaunchCallers callers;
  stacks.for_each([&](const profile::StackView& stack) {
    if (stack.frame_ids.size() < 4) return;
    std::string_view caller = stacks.string(stack.frame_ids[stack.frame_ids.size() - 4]);
    if (caller.find("launch_site_") != std::string_view::npos) callers.named += stack.count;
    if (caller == "[unknown]") callers.unknown += stack.count;
  });
  return callers;
}

// The program lives on for 300 ms among its launches, as programs do: the agent reads its
// mappings while it runs (a program gone first is the next test's).
TEST_F(GpuLaunchTest, EveryLaunchApiIsJoinedToItsStackAndGpuTimeIsConserved) {
  GpuRun run =
      this->run({"--gpu-mode", "gpu-only"}, {"--api", "all", "--rounds", "150", "--copies",
                                             "--kernel-ns", "1000000", "--pause-us", "2000"});
  ASSERT_TRUE(run.status.success()) << run.status.describe() << "\n" << run.log;
  EXPECT_EQ(run.program["failures"], 0);
  const json& gpu = run.profile.header["gpu"];
  EXPECT_GT(gpu["gpu_records"].get<uint64_t>(), 0u) << gpu.dump();
  EXPECT_EQ(gpu["joined"], gpu["gpu_records"]) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], 0) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_gpu_records"], 0) << gpu.dump();
  EXPECT_EQ(gpu["launches_without_mappings"], 0) << gpu.dump();
  // One launch per API call (runtime and nested driver calls count once): 150 rounds of 15 APIs,
  // three launches a round but for the two graph APIs (one), plus a memcpy and a memset a round.
  EXPECT_EQ(gpu["launches"], 10 * (13 * 3 + 2) + 150 * 2) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
  for (const char* api :
       {"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC",
        "cudaLaunchKernelExC_ptsz", "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernel_ptsz", "cudaLaunchCooperativeKernelMultiDevice",
        "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz", "cuLaunchKernel", "cuLaunchKernel_ptsz",
        "cuLaunchKernelEx", "cuLaunchCooperativeKernel", "cudaGraphLaunch", "cuGraphLaunch",
        "cudaMemcpy", "cudaMemset"}) {
    EXPECT_GT(run.by_api[api], 0u) << api << " has no GPU samples";
  }
  // Each kernel under its own launch site, the API frame between them; no frame of the CUDA
  // libraries or of libdormant_cupti between the program's frames and the API's.
  const profile::StackTable& stacks = run.profile.stacks;
  int checked = 0;
  stacks.for_each([&](const profile::StackView& stack) {
    std::vector<std::string_view> frames;
    for (auto id : stack.frame_ids) frames.push_back(stacks.string(id));
    if (frames.size() < 5 || !frames.back().starts_with("[GPU] ")) return;
    std::string_view kernel = frames.back();
    std::string_view api = frames[frames.size() - 3];
    std::string_view caller = frames[frames.size() - 4];
    bool graph = api == "cudaGraphLaunch" || api == "cuGraphLaunch";
    EXPECT_EQ(frames.front(), "[GPU 0]");
    EXPECT_EQ(frames[frames.size() - 2].substr(0, 7), graph ? "[graph " : "[stream") << kernel;
    for (const char* site : {"alpha", "beta", "gamma"}) {
      if (kernel.starts_with(std::string("[GPU] ") + site + "Kernel(float*)") && !graph) {
        EXPECT_NE(caller.find(std::string("launch_site_") + site), std::string_view::npos)
            << caller << " launched " << kernel;
        ++checked;
      }
    }
    for (std::string_view frame : frames) {
      EXPECT_EQ(frame.find("dormant_cupti"), std::string_view::npos) << frame;
      EXPECT_EQ(frame.find("fake_cupti"), std::string_view::npos) << frame;
    }
  });
  EXPECT_EQ(checked, 13 * 3);
}

// A program that exits within a millisecond of its launches may be gone before the agent reads
// its mappings: whether it was or not, its launches are either named or counted as not.
TEST_F(GpuLaunchTest, LaunchesOfAProgramGoneBeforeItsMappingsWereReadAreCounted) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"}, {"--api", "runtime", "--rounds", "100"});
  ASSERT_TRUE(run.status.success()) << run.status.describe() << "\n" << run.log;
  const json& gpu = run.profile.header["gpu"];
  uint64_t without = gpu["launches_without_mappings"].get<uint64_t>();
  LaunchCallers callers = launch_callers(run.profile.stacks);
  std::cout << "launches without mappings: " << without << " of " << gpu["launches"] << "\n";
  EXPECT_EQ(callers.named + callers.unknown, run.gpu_samples);
  EXPECT_LE(without, gpu["launches"].get<uint64_t>());
  EXPECT_EQ(without > 0, callers.unknown > 0) << gpu.dump();
  EXPECT_EQ(without == gpu["launches"].get<uint64_t>(), callers.named == 0) << gpu.dump();
}

TEST_F(GpuLaunchTest, ADriverCallWithItsOwnIdInsideARuntimeLaunchCountsOnce) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"}, {"--api", "runtime", "--rounds", "200"},
                         {"FAKE_CUDA_DRIVER_OWN_ID=1"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["launches"], 600) << gpu.dump();
  EXPECT_EQ(gpu["joined"], 600) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], 0) << gpu.dump();
  EXPECT_EQ(run.by_api["cudaLaunchKernel"], run.gpu_samples);
}

TEST_F(GpuLaunchTest, RecordsArrivingBeforeTheirLaunchEventsAreJoined) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"}, {"--api", "all", "--rounds", "60"},
                         {"FAKE_CUPTI_DELIVER_AT_ONCE=1"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["joined"], gpu["gpu_records"]) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], 0) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
}

TEST_F(GpuLaunchTest, EightThreadsOfTenThousandMicrosecondKernelsLoseNoTime) {
  // 8 × 3334 rounds × 3 launches: 80,016 launches of 1, 2 and 4 µs kernels, 187 ms of GPU time.
  GpuRun run = this->run({"--gpu-mode", "gpu-only"},
                         {"--threads", "8", "--rounds", "3334", "--kernel-ns", "1000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["launches"], 8 * 3334 * 3) << gpu.dump();
  EXPECT_EQ(gpu["lost_launches"], 0) << gpu.dump();
  EXPECT_EQ(gpu["lost_gpu_records"], 0) << gpu.dump();
  // At most 65,536 launches wait for their records. On a loaded machine the thread that has
  // CUPTI hand the records over can fall that far behind eight launching threads: each launch
  // past the cap, and its record, are unmatched then, counted in over_capacity, their time kept.
  EXPECT_EQ(gpu["joined"].get<uint64_t>() + gpu["over_capacity"].get<uint64_t>(), 8 * 3334 * 3)
      << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], gpu["over_capacity"]) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
  EXPECT_GT(run.gpu_samples, 150u);
}

// Two threads on two fake GPUs, each busy 7 ms of every ~27: each device has its own tree, its
// own stream, and its busy and idle time in the header, time conserved per device.
TEST_F(GpuLaunchTest, EachDeviceHasItsOwnTreeAndItsBusyAndIdleTime) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"},
                         {"--threads", "2", "--rounds", "60", "--pause-us", "20000"},
                         {"FAKE_CUDA_DEVICES=2"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& devices = run.profile.header["gpu"]["gpu_devices"];
  ASSERT_EQ(devices.size(), 2u) << devices.dump();
  // 60 rounds of 1 + 2 + 4 ms kernels per thread, and so per device.
  const double per_device_ns = 60 * 7e6;
  std::map<std::string, uint64_t> samples;  // by device frame
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    const profile::StackTable& stacks = run.profile.stacks;
    if (stack.frame_ids.size() < 3) return;
    std::string device(stacks.string(stack.frame_ids.front()));
    std::string stream(stacks.string(stack.frame_ids[stack.frame_ids.size() - 2]));
    EXPECT_EQ(stream, "[stream " + std::to_string(7 + (device == "[GPU 1]")) + "]") << device;
    samples[device] += stack.count;
  });
  for (const char* id : {"0", "1"}) {
    const json& device = devices[id];
    uint64_t wall = device["wall_ns"], busy = device["busy_ns"], idle = device["idle_ns"];
    EXPECT_NEAR(device["kernel_ns"].get<double>(), per_device_ns, per_device_ns * 1e-3) << id;
    EXPECT_NEAR(static_cast<double>(busy), per_device_ns, per_device_ns * 1e-3) << id;
    EXPECT_EQ(busy + idle, wall) << id;
    EXPECT_GT(idle, busy) << id;  // 20 ms pauses between 7 ms of work
    EXPECT_NEAR(static_cast<double>(samples["[GPU " + std::string(id) + "]"]),
                per_device_ns * 1000 / 1e9, 2.0)
        << id;
  }
}

// Two threads launching far past a rate of 2,000 stacks a second: most launches come without
// their stacks, their GPU time goes to the stacks of the same kernel's taken launches, and the
// profile's GPU time is whole, each kernel under its own launch site.
TEST_F(GpuLaunchTest, PastTheLaunchRateStacksAreSampledAndGpuTimeIsConserved) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"},
                         {"--threads", "2", "--rounds", "40000", "--kernel-ns", "1000"},
                         {"DORMANT_CUPTI_LAUNCH_RATE=2000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  const uint64_t launches = 2 * 40000 * 3;
  EXPECT_EQ(gpu["launches"], launches) << gpu.dump();
  uint64_t not_taken = gpu["launch_stacks_not_taken"];
  double seconds = run.program["elapsed_ns"].get<double>() / 1e9;
  std::cout << launches - not_taken << " of " << launches << " launches taken in " << seconds
            << " s\n";
  // Per thread: the rate, and at most a window's worth (200) more at each burst's start.
  EXPECT_LE(static_cast<double>(launches - not_taken), 2 * (2000 * seconds * 1.5 + 400))
      << gpu.dump() << " in " << seconds << " s";
  EXPECT_GT(not_taken, launches / 2) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
  uint64_t under_site = 0, elsewhere = 0;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    const profile::StackTable& stacks = run.profile.stacks;
    std::string_view kernel = stacks.string(stack.frame_ids.back());
    if (!kernel.starts_with("[GPU] ") || stack.frame_ids.size() < 4) return;
    std::string_view caller = stacks.string(stack.frame_ids[stack.frame_ids.size() - 4]);
    std::string site(kernel.substr(6, kernel.find("Kernel") - 6));
    (caller.find("launch_site_" + site) != std::string_view::npos ? under_site : elsewhere) +=
        stack.count;
  });
  EXPECT_EQ(elsewhere, 0u);
  EXPECT_NEAR(static_cast<double>(under_site), expected_samples(run.program), 1.0);
}

// A CUDA 12 program (libcudart.so.12 and libcupti.so.12, as with PyTorch's cu12 wheels): the one
// library file takes the program's CUPTI 12, leaves out the launch APIs CUDA 13 added, and joins
// every launch as on CUDA 13.
TEST_F(GpuLaunchTest, ACuda12ProgramIsProfiledThroughItsOwnCupti) {
  GpuRun run = run_program_under_agent(
      {"--gpu-mode", "gpu-only"},
      {FAKE_CUDA12_DIR "/fake_cuda_app", "--api", "all", "--rounds", "30", "--copies"}, {},
      FAKE_CUDA12_DIR);
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  // CUDA 12's CUPTI has no callback for CUDA 13's __cudaLaunchKernel: those launches are seen
  // through the driver call inside them (cuLaunchKernelEx). Every launch is joined as on 13.
  EXPECT_EQ(gpu["launches"], 2 * (13 * 3 + 2) + 30 * 2) << gpu.dump();
  EXPECT_EQ(gpu["joined"], gpu["gpu_records"]) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_gpu_records"], 0) << gpu.dump();
  EXPECT_EQ(run.by_api["__cudaLaunchKernel"], 0u);
  EXPECT_GT(run.by_api["cuLaunchKernelEx"], 0u);
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
  EXPECT_GT(run.by_api["cudaLaunchKernel"], 0u);
  EXPECT_GT(run.by_api["cuGraphLaunch"], 0u);
}

// nvcc links CUDA's runtime into the program by default: its frames (the API's own, those of
// namespace cudart) are left out, so that the API frame follows the program's caller.
TEST_F(GpuLaunchTest, AStaticRuntimesFramesAreLeftOutOfLaunchStacks) {
  GpuRun run = run_program_under_agent(
      {"--gpu-mode", "gpu-only"},
      {FAKE_CUDA_DIR "/fake_cuda_app_static", "--api", "runtime", "--rounds", "100"}, {});
  ASSERT_TRUE(run.status.success()) << run.log;
  uint64_t checked = 0;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    const profile::StackTable& stacks = run.profile.stacks;
    if (stack.frame_ids.size() < 4) return;
    std::string line;
    for (auto id : stack.frame_ids) line += std::string(stacks.string(id)) + ";";
    EXPECT_EQ(line.find("cudart::"), std::string::npos) << line;
    EXPECT_EQ(stacks.string(stack.frame_ids[stack.frame_ids.size() - 3]), "cudaLaunchKernel");
    EXPECT_NE(stacks.string(stack.frame_ids[stack.frame_ids.size() - 4]).find("launch_site_"),
              std::string_view::npos)
        << line;
    checked += stack.count;
  });
  EXPECT_GT(checked, 0u);
}

// More records in one snapshot than the join hands out at once (1,000,000), at about 100,000 a
// second: summed by stack as they come, every one keeps its time under its own launch site.
TEST_F(GpuLaunchTest, MillionsOfRecordsInOneSnapshotAllKeepTheirStacks) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"}, {"--threads", "2", "--rounds", "175000",
                                                      "--kernel-ns", "100", "--pause-us", "1"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["gpu_records"], 2 * 175000 * 3) << gpu.dump();
  EXPECT_EQ(gpu["gpu_records_past_bound"], 0) << gpu.dump();
  EXPECT_EQ(gpu["gpu_records_outside_session"], 0) << gpu.dump();
  EXPECT_EQ(gpu["joined"], 2 * 175000 * 3) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
  EXPECT_NEAR(static_cast<double>(launch_callers(run.profile.stacks).named),
              expected_samples(run.program), expected_samples(run.program) * 0.01 + 1)
      << gpu.dump();
}

TEST_F(GpuLaunchTest, RecordsCuptiDroppedAreCountedAndTheirLaunchesUnmatched) {
  GpuRun run =
      this->run({"--gpu-mode", "gpu-only"}, {"--rounds", "100"}, {"FAKE_CUPTI_DROP_EVERY=10"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["dropped_records"], 30) << gpu.dump();
  EXPECT_EQ(gpu["gpu_records"], 270) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], 30) << gpu.dump();
}

TEST_F(GpuLaunchTest, MergeHasCpuSamplesBesideGpuWork) {
  GpuRun run = this->run({"--gpu-mode", "merge"}, {"--rounds", "40000", "--kernel-ns", "1000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  EXPECT_GT(run.gpu_samples, 0u);
  EXPECT_GT(run.profile.stacks.total_samples(), run.gpu_samples) << "no CPU samples";
}

TEST_F(GpuLaunchTest, CpuOnlyStartsTheProgramWithoutTheLibrary) {
  GpuRun run = this->run({"--gpu-mode", "cpu-only"}, {"--rounds", "40000", "--kernel-ns", "1000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  EXPECT_EQ(run.gpu_samples, 0u);
  EXPECT_TRUE(run.profile.header["gpu"].is_null()) << run.profile.header["gpu"].dump();
  EXPECT_EQ(run.log.find("gpu: attached"), std::string::npos) << run.log;
}

TEST_F(GpuLaunchTest, TheProgramsExitCodeIsTheAgents) {
  GpuRun run = this->run({}, {"--no-such-flag"});
  EXPECT_EQ(run.status.code, 2) << run.status.describe() << "\n" << run.log;
}

TEST_F(GpuLaunchTest, ASignalToTheAgentGoesToTheProgramAndItsProfileIsKept) {
  SpawnOptions options;
  options.argv = {DORMANT_AGENT,  "gpu",
                  "-o",           (root_ / "out").string(),
                  "-f",           "1000",
                  "--gpu-mode",   "gpu-only",
                  "--",           FAKE_CUDA_DIR "/fake_cuda_app",
                  "--until-file", (root_ / "never").string(),
                  "--pause-us",   "100"};
  options.env = {"LD_LIBRARY_PATH=" FAKE_CUDA_DIR};
  options.stdout_to = Redirect::null();
  const fs::path log = root_ / "agent.log";
  options.stderr_to = Redirect::file(log);
  auto agent = Subprocess::spawn(options);
  ASSERT_TRUE(agent.ok()) << agent.error().message();
  auto agent_log = [&] { return read_file(log).value_or(""); };
  // Attached, however long that takes on a loaded machine; then launches to join.
  ASSERT_TRUE(dormant::testing::eventually(
      [&] { return agent_log().find("gpu: attached") != std::string::npos; },
      std::chrono::seconds(60)))
      << agent_log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill((*agent)->pid(), SIGTERM);
  auto status = (*agent)->wait(deadline_after(std::chrono::seconds(30)));
  ASSERT_TRUE(status.ok()) << "the agent did not end";
  EXPECT_EQ(status->code, 128 + SIGTERM) << status->describe() << "\n" << agent_log();
  std::ifstream file(root_ / "out" / "last_profile.col");
  std::stringstream text;
  text << file.rdbuf();
  auto profile = profile::read_collapsed(text.str());
  ASSERT_TRUE(profile.ok()) << agent_log();
  EXPECT_GT(profile->header["gpu"]["joined"].get<uint64_t>(), 0u) << profile->header.dump();
}

// GPU records whose launch never came (CUPTI did not call back for it) and that still wait at the
// session's end are handed out in its last profile, without a launch, not dropped.
TEST_F(GpuLaunchTest, WorkStillWaitingForItsLaunchAtTheEndIsInTheLastProfile) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"}, {"--api", "runtime", "--rounds", "300"},
                         {"FAKE_CUPTI_UNSEEN_EVERY=10"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["launches"], 810) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_gpu_records"], 90) << gpu.dump();
  EXPECT_EQ(gpu["pending_gpu_records"], 0) << gpu.dump();
  EXPECT_EQ(gpu["joined"], 810) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
}

// Graph launches submit any number of kernels under one id: each is retired once its kernels are
// in, so that 70,000 of them in one profile are all joined, none refused.
TEST_F(GpuLaunchTest, SeventyThousandGraphLaunchesAreAllJoined) {
  GpuRun run = this->run({"--gpu-mode", "gpu-only"},
                         {"--api", "graph", "--rounds", "70000", "--kernel-ns", "1000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  std::cout << gpu.dump() << "\n";
  EXPECT_EQ(gpu["launches"], 70000) << gpu.dump();
  EXPECT_EQ(gpu["over_capacity"], 0) << gpu.dump();
  EXPECT_EQ(gpu["joined"], 3 * 70000) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_gpu_records"], 0) << gpu.dump();
  EXPECT_EQ(gpu["unmatched_launches"], 0) << gpu.dump();
  EXPECT_GT(gpu["graph_launches_retired"].get<uint64_t>(), 0u) << gpu.dump();
  EXPECT_NEAR(static_cast<double>(run.gpu_samples), expected_samples(run.program), 1.0);
}

// A session that ends while a thread is inside a runtime launch (its exit callback never comes:
// recording is off by then) leaves nothing of it behind: in the next session that thread's
// driver-API launches (Triton's, NCCL's, cuBLASLt's) are joined like any other.
TEST_F(GpuLaunchTest, AStopInsideARuntimeLaunchLeavesTheThreadsLaterLaunchesWhole) {
  // First runtime launches, nearly all of the program's time inside them: a stop lands in one.
  // Then driver launches only, as a Triton kernel's.
  fs::path driver_from_now = root_ / "driver-from-now";
  auto program = start_program({"--api", "runtime", "--then-api", "driver", "--once-file",
                                driver_from_now.string(), "--pause-us", "1000"},
                               {"FAKE_CUDA_RUNTIME_WORK_US=3000"});
  ASSERT_TRUE(program);
  GpuRun runtime = profile_running({program->pid()}, 2);
  ASSERT_TRUE(runtime.status.success()) << runtime.log;
  EXPECT_GT(runtime.by_api["cudaLaunchKernel"], 0u) << runtime.profile.header.dump();
  std::ofstream(driver_from_now).put('\n');
  GpuRun driver = profile_running({program->pid()}, 2);
  ASSERT_TRUE(driver.status.success()) << driver.log;
  const json& gpu = driver.profile.header["gpu"];
  std::cout << "the next session: " << gpu.dump() << "\n";
  EXPECT_GT(gpu["gpu_records"].get<uint64_t>(), 100u) << gpu.dump();
  EXPECT_EQ(driver.by_api["cuLaunchKernel"], driver.gpu_samples) << gpu.dump();
  EXPECT_LT(gpu["unmatched_gpu_records"].get<uint64_t>() * 100, gpu["gpu_records"].get<uint64_t>())
      << gpu.dump();
}

// Profiling one program switches recording on in that program alone: another that maps the same
// library file stays dormant.
// A process whose GPU records all lie (half claim 2^62 ns, half to have run in 1970) beside an
// honest one: the lies are dropped or cut to the session, the liar's GPU time stays within
// kMaxOverlap (4) times the session's wall time, and the honest program's is untouched.
TEST_F(GpuLaunchTest, ForgedGpuRecordsWeighNoMoreThanTheSessionsWallTime) {
  fs::create_symlink(FAKE_CUDA_DIR "/fake_cuda_app", root_ / "liar");
  auto honest = start_program({"--pause-us", "3000"}, {}, "honest");
  auto liar = start_program({"--pause-us", "3000"}, {"FAKE_CUPTI_FORGE_EVERY=2"}, "liar", {},
                            root_ / "liar");
  ASSERT_TRUE(honest && liar);
  GpuRun run = profile_running({honest->pid(), liar->pid()}, 3);
  ASSERT_TRUE(run.status.success()) << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_GT(gpu["gpu_records_outside_session"].get<uint64_t>(), 0u) << gpu.dump();
  EXPECT_GT(gpu["gpu_ns_past_wall_time"].get<uint64_t>(), 0u) << gpu.dump();
  double wall_s = gpu["gpu_devices"]["0"]["wall_ns"].get<double>() / 1e9;
  uint64_t honest_samples = 0, liar_samples = 0;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    std::string_view leaf = run.profile.stacks.string(stack.frame_ids.back());
    if (!leaf.starts_with("[GPU] ")) return;
    (stack.comm == "liar" ? liar_samples : honest_samples) += stack.count;
  });
  std::cout << "honest " << honest_samples << " liar " << liar_samples << " samples in " << wall_s
            << " s\n";
  // No more than the whole device for the session (and 50 ms for the clocks), within a sample
  // of rounding for each of its stacks.
  EXPECT_LE(static_cast<double>(liar_samples), (wall_s + 0.05) * 1000 + 3) << gpu.dump();
  // 7 ms of kernels and a 3 ms pause a round: busy most of the session.
  EXPECT_GT(static_cast<double>(honest_samples), 0.3 * wall_s * 1000) << gpu.dump();
  EXPECT_LE(static_cast<double>(honest_samples), 1.0 * (wall_s + 1) * 1000) << gpu.dump();
}

// A `seconds` session of the running `pid` as the agent's own process: its peak resident memory
// (VmHWM, read as it runs), how long it took, and what it wrote.
struct MeasuredSession {
  uint64_t peak_kb = 0;
  double seconds = 0;
  bool succeeded = false;
  json gpu;
  std::string log;
};

MeasuredSession measure_session(const fs::path& root, pid_t pid, int seconds) {
  fs::remove_all(root / "out");
  SpawnOptions options;
  options.argv = {DORMANT_AGENT, "-o",     (root / "out").string(), "-f",
                  "1000",        "-d",     std::to_string(seconds), "--gpu-mode",
                  "gpu-only",    "--pids", std::to_string(pid)};
  options.stdout_to = Redirect::null();
  options.stderr_to = Redirect::file(root / "agent.log");
  // Under AddressSanitizer, freed memory is not held back for reuse checks: what is measured is
  // what the agent holds.
  const char* asan_options = std::getenv("ASAN_OPTIONS");
  options.env = {std::string("ASAN_OPTIONS=") + (asan_options ? asan_options : "") +
                 ":quarantine_size_mb=0:thread_local_quarantine_size_kb=0"};
  MeasuredSession measured;
  auto began = std::chrono::steady_clock::now();
  auto agent = Subprocess::spawn(options);
  EXPECT_TRUE(agent.ok()) << agent.error().message();
  if (!agent.ok()) return measured;
  std::optional<ExitStatus> status;
  const fs::path status_file = "/proc/" + std::to_string((*agent)->pid()) + "/status";
  while (!(status = (*agent)->try_wait())) {
    std::ifstream file(status_file);
    for (std::string line; std::getline(file, line);) {
      if (line.starts_with("VmHWM:")) {
        measured.peak_kb = std::max<uint64_t>(measured.peak_kb, std::stoull(line.substr(6)));
      }
    }
    if (std::chrono::steady_clock::now() - began > std::chrono::seconds(60)) {
      status = (*agent)->terminate(std::chrono::seconds(1));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  measured.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  measured.succeeded = status->success();
  measured.log = read_file(root / "agent.log").value_or("");
  auto profile = profile::read_collapsed(read_file(root / "out" / "last_profile.col").value_or(""));
  if (profile.ok()) measured.gpu = profile->header["gpu"];
  return measured;
}

// A program whose every kernel record comes with 200 more of no launch, against the same program
// without them: the 5 s session ends on time with its profile, and the
// flood costs the agent at most 64 MiB more at its peak.
TEST_F(GpuLaunchTest, AFloodOfGpuRecordsCostsTheAgentABoundedPeak) {
  auto quiet = start_program({"--kernel-ns", "1000", "--pause-us", "100"}, {}, "quiet");
  ASSERT_TRUE(quiet);
  MeasuredSession baseline = measure_session(root_, quiet->pid(), 5);
  std::ofstream(root_ / "stop").put('\n');
  (void)quiet->wait(deadline_after(std::chrono::seconds(10)));
  fs::remove(root_ / "stop");
  auto flooding = start_program({"--kernel-ns", "1000", "--threads", "2"}, {"FAKE_CUPTI_FLOOD=200"},
                                "flooding");
  ASSERT_TRUE(flooding);
  MeasuredSession flood = measure_session(root_, flooding->pid(), 5);
  std::cout << "peak: " << baseline.peak_kb / 1024 << " MiB quiet, " << flood.peak_kb / 1024
            << " MiB flooded (" << flood.gpu.value("gpu_records", 0ull) << " records, "
            << flood.gpu.value("lost_gpu_records", 0ull) << " lost in the ring buffer); "
            << baseline.seconds << " s quiet, " << flood.seconds << " s flooded\n";
  ASSERT_TRUE(baseline.succeeded) << baseline.log;
  ASSERT_TRUE(flood.succeeded) << flood.log;
  // On time: the flood's session ends as the quiet one does, within a session's length more.
  EXPECT_LT(flood.seconds, 2 * baseline.seconds);
  // A flood it was: about 2 million records here, a few hundred thousand on a loaded machine.
  EXPECT_GT(flood.gpu.value("unmatched_gpu_records", 0ull), 100'000u) << flood.gpu.dump();
  EXPECT_LE(flood.peak_kb, baseline.peak_kb + 64 * 1024) << flood.gpu.dump();
}

// A program past its rate of GPU records a second: the records past it are counted and their
// time kept under the program, without their stacks; another program's records all come whole.
TEST_F(GpuLaunchTest, RecordsPastAProcesssRateKeepTheirTimeAndSpareTheOthers) {
  fs::create_symlink(FAKE_CUDA_DIR "/fake_cuda_app", root_ / "flooder");
  auto honest = start_program({"--pause-us", "3000"}, {}, "honest");
  auto flooder = start_program({"--kernel-ns", "1000", "--pause-us", "100"},
                               {"FAKE_CUPTI_FLOOD=50"}, "flooder", {}, root_ / "flooder");
  ASSERT_TRUE(honest && flooder);
  Ran ran =
      run_program({DORMANT_AGENT, "-o", (root_ / "out").string(), "-f", "1000", "-d", "3",
                   "--gpu-mode", "gpu-only", "--gpu-max-records-per-second", "20000", "--pids",
                   std::to_string(honest->pid()) + "," + std::to_string(flooder->pid())},
                  {});
  ASSERT_TRUE(ran.status.success()) << ran.err;
  GpuRun run;
  read_profile(run);
  const json& gpu = run.profile.header["gpu"];
  EXPECT_GT(gpu["gpu_records_past_rate"].get<uint64_t>(), 10'000u) << gpu.dump();
  uint64_t flooder_past = 0, honest_past = 0, honest_joined = 0;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    std::string_view leaf = run.profile.stacks.string(stack.frame_ids.back());
    bool past = leaf.starts_with("[GPU work past the bounds");
    if (stack.comm == "flooder") flooder_past += past ? stack.count : 0;
    if (stack.comm != "flooder") (past ? honest_past : honest_joined) += stack.count;
  });
  EXPECT_GT(flooder_past, 0u) << gpu.dump();
  EXPECT_EQ(honest_past, 0u) << gpu.dump();
  // 7 ms of kernels and a 3 ms pause a round: busy most of the session's 3 s.
  EXPECT_GT(honest_joined, 900u) << gpu.dump();
}

// Each attack of the GPU path at once (forged times, a flood of records, a flood past the rate):
// a 5 s session ends within 10 s with its profile, and SIGTERM ends a long one within 10 s.
TEST_F(GpuLaunchTest, UnderAttackASessionEndsOnTimeAndSigtermEndsTheAgent) {
  auto liar = start_program({"--pause-us", "3000"}, {"FAKE_CUPTI_FORGE_EVERY=2"}, "liar");
  auto flooder =
      start_program({"--kernel-ns", "1000", "--threads", "2"}, {"FAKE_CUPTI_FLOOD=200"}, "flooder");
  ASSERT_TRUE(liar && flooder);
  std::string pids = std::to_string(liar->pid()) + "," + std::to_string(flooder->pid());
  auto agent_argv = [&](const char* seconds) {
    return std::vector<std::string>{DORMANT_AGENT, "-o",         (root_ / "out").string(),
                                    "-f",          "1000",       "-d",
                                    seconds,       "--gpu-mode", "gpu-only",
                                    "--pids",      pids};
  };
  auto began = std::chrono::steady_clock::now();
  Ran ran = run_program(agent_argv("5"), {});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_TRUE(ran.status.success()) << ran.err;
  EXPECT_LT(took, 10.0) << ran.err;
  EXPECT_TRUE(fs::exists(root_ / "out" / "last_profile.col")) << ran.err;

  fs::remove_all(root_ / "out");
  SpawnOptions options;
  options.argv = agent_argv("600");
  const fs::path log = root_ / "agent.log";
  options.stdout_to = Redirect::null();
  options.stderr_to = Redirect::file(log);
  auto agent = Subprocess::spawn(options);
  ASSERT_TRUE(agent.ok()) << agent.error().message();
  ASSERT_TRUE(dormant::testing::eventually(
      [&] { return read_file(log).value_or("").find("gpu: attached") != std::string::npos; },
      std::chrono::seconds(60)))
      << read_file(log).value_or("");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  began = std::chrono::steady_clock::now();
  ::kill((*agent)->pid(), SIGTERM);
  auto status = (*agent)->wait(deadline_after(std::chrono::seconds(10)));
  took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  ASSERT_TRUE(status.ok()) << "SIGTERM did not end the agent within 10 s\n"
                           << read_file(log).value_or("");
  std::cout << "SIGTERM under attack: the agent ended in " << took << " s\n";
}

// Attaching past --gpu-start-timeout is given up: the program runs to its end, profiled on the
// CPU, and the profile says why it has no GPU work.
TEST_F(GpuLaunchTest, AGpuStartPastItsDeadlineLeavesTheCpuProfile) {
  GpuRun run = this->run({"--gpu-mode", "merge", "--gpu-start-timeout", "0.001"},
                         {"--rounds", "40000", "--kernel-ns", "1000"});
  ASSERT_TRUE(run.status.success()) << run.log;
  EXPECT_NE(run.log.find("took longer than its 1 ms"), std::string::npos) << run.log;
  EXPECT_EQ(run.gpu_samples, 0u);
  EXPECT_GT(run.profile.stacks.total_samples(), 0u) << "no CPU samples\n" << run.log;
  bool marked = false;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    for (auto id : stack.frame_ids) {
      marked = marked || run.profile.stacks.string(id).starts_with("[Profiling gpu: ");
    }
  });
  EXPECT_TRUE(marked) << run.log;
}

// A program that loads NCCL has its launcher's rank after its device; another, with the same
// environment but no NCCL, has none.
TEST_F(GpuLaunchTest, AnNcclRanksStacksCarryItsRankAfterTheDevice) {
  for (bool nccl : {true, false}) {
    std::vector<std::string> args = {"--rounds", "3000",       "--kernel-ns",
                                     "1000",     "--pause-us", "200"};
    if (nccl) args.push_back("--nccl");
    GpuRun run = this->run({"--gpu-mode", "gpu-only"}, args, {"RANK=3"});
    ASSERT_TRUE(run.status.success()) << run.log;
    uint64_t ranked = 0, unranked = 0;
    run.profile.stacks.for_each([&](const profile::StackView& stack) {
      if (stack.frame_ids.size() < 2) return;
      bool has_rank = run.profile.stacks.string(stack.frame_ids[1]) == "[rank 3]";
      EXPECT_TRUE(run.profile.stacks.string(stack.frame_ids[0]).starts_with("[GPU "));
      (has_rank ? ranked : unranked) += stack.count;
    });
    EXPECT_EQ(nccl ? unranked : ranked, 0u) << "nccl: " << nccl;
    EXPECT_GT(nccl ? ranked : unranked, 0u) << "nccl: " << nccl;
  }
}

TEST_F(GpuLaunchTest, AttachingToOneProgramLeavesAnotherOfTheSameLibraryDormant) {
  auto target = start_program({"--pause-us", "200"}, {}, "target");
  auto bystander = start_program({"--pause-us", "200"}, {}, "bystander");
  ASSERT_TRUE(target && bystander);
  constexpr const char* kDormant = dormant::testing::kFakeCuptiDormant;
  ASSERT_EQ(cupti_state(bystander->pid(), "bystander"), kDormant);
  SpawnOptions options;
  options.argv = {DORMANT_AGENT, "-o",     (root_ / "out").string(),     "-d", "4", "--gpu-mode",
                  "gpu-only",    "--pids", std::to_string(target->pid())};
  const fs::path log = root_ / "agent.log";
  options.stdout_to = Redirect::null();
  options.stderr_to = Redirect::file(log);
  auto agent = Subprocess::spawn(options);
  ASSERT_TRUE(agent.ok()) << agent.error().message();
  EXPECT_TRUE(dormant::testing::eventually(
      [&] { return cupti_state(target->pid(), "target") != kDormant; }, std::chrono::seconds(30)))
      << read_file(log).value_or("");
  EXPECT_EQ(cupti_state(bystander->pid(), "bystander"), kDormant);
  auto status = (*agent)->wait(deadline_after(std::chrono::seconds(60)));
  ASSERT_TRUE(status.ok() && status->success()) << read_file(log).value_or("");
  auto profile =
      profile::read_collapsed(read_file(root_ / "out" / "last_profile.col").value_or(""));
  ASSERT_TRUE(profile.ok()) << read_file(log).value_or("");
  EXPECT_GT(profile->header["gpu"]["joined"].get<uint64_t>(), 0u) << profile->header.dump();
  EXPECT_EQ(profile->header["gpu"]["processes_attached"], 1) << profile->header.dump();
}

// A launcher's workers do the work: `gpu -- sh -c ...` (as torchrun, mpirun and accelerate start
// theirs) profiles the processes the program starts, their launches and their CPU samples.
TEST_F(GpuLaunchTest, TheProcessesALaunchedProgramStartsAreProfiled) {
  std::string app = std::string(FAKE_CUDA_DIR
                                "/fake_cuda_app --rounds 1500 --pause-us 1000 "
                                "--kernel-ns 1000");
  // Two shells deep, each forking (a command before `true` is not exec'd in the shell's place).
  GpuRun run = run_program_under_agent({"--gpu-mode", "merge"},
                                       {"sh", "-c", "sh -c '" + app + "; true'; true"}, {});
  ASSERT_TRUE(run.status.success()) << run.status.describe() << "\n" << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_GT(gpu["joined"].get<uint64_t>(), 0u) << gpu.dump() << "\n" << run.log;
  EXPECT_GE(gpu["processes_attached"].get<uint64_t>(), 3u) << gpu.dump();
  uint64_t app_cpu = 0;
  run.profile.stacks.for_each([&](const profile::StackView& stack) {
    std::string_view leaf = run.profile.stacks.string(stack.frame_ids.back());
    if (stack.comm == "fake_cuda_app" && !leaf.starts_with("[GPU] ")) app_cpu += stack.count;
  });
  EXPECT_GT(app_cpu, 0u) << "no CPU samples of the launched program's grandchild";
}

// Kernel names past what the probe carries (CUTLASS's run to kilobytes) come cut and hashed:
// three 600-byte names that differ only in their last bytes stay three frames.
// Names as long as CUTLASS's come whole; past the library's 4,095 bytes, or the agent's
// --gpu-kernel-name-bytes, they are cut and end in a hash, so that names that differ only past
// the cut stay apart.
TEST_F(GpuLaunchTest, LongKernelNamesThatDifferPastTheCutStayApart) {
  struct Case {
    const char* name_bytes;
    std::vector<std::string> agent_args;
    size_t frame_bytes;
    bool cut;
  };
  const Case cases[] = {{"600", {}, 600, false},
                        {"5000", {}, 4095, true},
                        {"600", {"--gpu-kernel-name-bytes", "300"}, 300, true}};
  for (const Case& one : cases) {
    std::vector<std::string> agent_args = {"--gpu-mode", "gpu-only"};
    agent_args.insert(agent_args.end(), one.agent_args.begin(), one.agent_args.end());
    GpuRun run = this->run(agent_args, {"--long-names", one.name_bytes, "--rounds", "100"});
    ASSERT_TRUE(run.status.success()) << run.log;
    std::map<std::string, uint64_t> kernels;
    const profile::StackTable& stacks = run.profile.stacks;
    stacks.for_each([&](const profile::StackView& stack) {
      std::string_view leaf = stacks.string(stack.frame_ids.back());
      if (leaf.starts_with("[GPU] ")) kernels[std::string(leaf)] += stack.count;
    });
    ASSERT_EQ(kernels.size(), 3u) << one.name_bytes << " " << one.frame_bytes;
    std::vector<uint64_t> samples;
    for (const auto& [name, count] : kernels) {
      EXPECT_EQ(name.size(), std::string("[GPU] ").size() + one.frame_bytes) << name;
      EXPECT_TRUE(name.starts_with("[GPU] cutlass_kernel_xxx")) << name;
      EXPECT_EQ(name[name.size() - 17] == '#', one.cut) << name;
      samples.push_back(count);
    }
    std::sort(samples.begin(), samples.end());  // 1, 2 and 4 ms a round
    EXPECT_NEAR(static_cast<double>(samples[1]) / static_cast<double>(samples[0]), 2.0, 0.05);
    EXPECT_NEAR(static_cast<double>(samples[2]) / static_cast<double>(samples[0]), 4.0, 0.1);
  }
}

// With another CUPTI client holding the program (Nsight, torch.profiler), the library says so once
// and the program runs on, unprofiled.
TEST_F(GpuLaunchTest, TheProgramRunsOnWhenAnotherClientHasCupti) {
  GpuRun run =
      this->run({"--gpu-mode", "gpu-only"}, {"--rounds", "50"}, {"FAKE_CUPTI_SUBSCRIBE_FAILS=1"});
  EXPECT_TRUE(run.status.success()) << run.log;
  EXPECT_EQ(run.program["failures"], 0);
  // CUDA 13's CUPTI says who holds it (the fake plays Nsight Systems).
  std::string said = "dormant_cupti: another CUPTI client (Nsight Systems) has this process";
  EXPECT_NE(run.log.find(said), std::string::npos) << run.log;
  EXPECT_EQ(run.log.find(said), run.log.rfind(said)) << "said more than once:\n" << run.log;
  EXPECT_EQ(run.profile.header["gpu"]["launches"], 0) << run.profile.header.dump();
}

// The program's own CUPTI client (torch.profiler's, Nsight's) works before, during no session
// and after one: the library holds CUPTI only while an agent is attached.
TEST_F(GpuLaunchTest, AProgramsOwnCuptiClientWorksBeforeAndAfterASession) {
  fs::path own_client = root_ / "own-client";
  auto program = start_program({"--pause-us", "500", "--own-client-file", own_client.string()}, {},
                               "program", root_ / "program.out");
  ASSERT_TRUE(program);
  auto use_own_client = [&] {
    std::ofstream(own_client).put('\n');
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    fs::remove(own_client);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  };
  use_own_client();
  GpuRun run = profile_running({program->pid()}, 2);
  ASSERT_TRUE(run.status.success()) << run.log;
  EXPECT_GT(run.profile.header["gpu"]["joined"].get<uint64_t>(), 0u) << run.profile.header.dump();
  use_own_client();
  std::ofstream(root_ / "stop").put('\n');
  ASSERT_TRUE(program->wait(deadline_after(std::chrono::seconds(30))).ok());
  json said = json::parse(program_output(read_file(root_ / "program.out").value_or("")));
  EXPECT_EQ(said["own_subscribed"], 2) << said.dump();
  EXPECT_EQ(said["own_refused"], 0) << said.dump();
  EXPECT_GT(said["own_callbacks"].get<uint64_t>(), 0u) << said.dump();
}

TEST_F(GpuLaunchTest, AMissingLibraryIsAClearError) {
  GpuRun run = this->run({"--cupti-library", "/nonexistent/libdormant_cupti.so"}, {});
  EXPECT_EQ(run.status.code, 1);
  EXPECT_TRUE(run.program.empty()) << "the program ran: " << run.program.dump();
  EXPECT_NE(run.log.find("/nonexistent/libdormant_cupti.so"), std::string::npos) << run.log;
}

// Each CPython installed here (Debian's python3.11; pyenv's 3.9 to 3.13, shared libpython), for
// the launch stacks' Python frames.
std::vector<std::string> installed_pythons() {
  std::vector<std::string> pythons;
  std::istringstream installed(PYTHON_INTERPRETERS);
  std::string python;
  while (std::getline(installed, python, ':')) {
    if (!python.empty()) pythons.push_back(python);
  }
  return pythons;
}

class GpuPythonLaunchTest : public GpuLaunchTest,
                            public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    GpuLaunchTest::SetUp();
    if (IsSkipped()) return;
    if (!fs::exists(GetParam())) {
      GTEST_SKIP() << GetParam() << " was installed when this test was built, and is gone";
    }
  }
};

// A kernel launched from Python (through ctypes, without the GIL) has the launching thread's
// Python frames above it, in order, among the interpreter's native frames.
TEST_P(GpuPythonLaunchTest, KernelsLaunchedFromPythonHaveTheirPythonFramesInOrder) {
  GpuRun run = run_program_under_agent({"--gpu-mode", "gpu-only"},
                                       {GetParam(), TRAIN_PY, FAKE_CUDA_DIR, "200"}, {});
  ASSERT_TRUE(run.status.success()) << run.status.describe() << "\n" << run.log;
  const json& gpu = run.profile.header["gpu"];
  EXPECT_EQ(gpu["launches"], 400) << gpu.dump();
  EXPECT_EQ(gpu["launches_with_python"], 400) << gpu.dump();
  EXPECT_EQ(gpu["joined"], 400) << gpu.dump();
  // Python 3.11 qualifies the methods' names; 3.9 and 3.10 have none to give.
  auto python_frame = [](std::string_view frame, std::string_view function) {
    return frame.ends_with("_[p]") && frame.find("train.py:") != std::string_view::npos &&
           (frame.starts_with(std::string(function) + " (") ||
            frame.starts_with("Model." + std::string(function) + " ("));
  };
  uint64_t alpha = 0, beta = 0, in_order = 0;
  const profile::StackTable& stacks = run.profile.stacks;
  stacks.for_each([&](const profile::StackView& stack) {
    std::vector<std::string_view> frames;
    for (auto id : stack.frame_ids) frames.push_back(stacks.string(id));
    if (frames.size() < 2 || !frames.back().starts_with("[GPU] ")) return;
    bool is_alpha = frames.back() == "[GPU] alphaKernel(float*)";
    (is_alpha ? alpha : beta) += stack.count;
    // Root first: main, train_step, forward or backward, launch, then native frames only, the
    // API frame and the kernel.
    std::vector<std::string_view> expected = {"main", "train_step",
                                              is_alpha ? "forward" : "backward", "launch"};
    size_t next = 0, last_python = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (next < expected.size() && python_frame(frames[i], expected[next])) ++next;
      if (frames[i].ends_with("_[p]")) last_python = i;
    }
    bool native_after = last_python + 2 < frames.size() &&
                        frames[last_python + 1].ends_with("_[pn]") &&
                        frames[frames.size() - 3] == "cudaLaunchKernel";
    std::string line;
    for (auto frame : frames) line += std::string(frame) + ";";
    if (next == expected.size() && native_after) {
      in_order += stack.count;
      if (in_order == stack.count) std::cout << "  " << line << " " << stack.count << "\n";
    } else {
      ADD_FAILURE() << "out of order: " << line;
    }
  });
  std::cout << GetParam() << ": " << in_order << " of " << alpha + beta
            << " GPU samples under their Python frames; alpha " << alpha << ", beta " << beta
            << "\n";
  EXPECT_EQ(in_order, alpha + beta);
  EXPECT_NEAR(static_cast<double>(beta) / static_cast<double>(alpha), 2.0, 0.05);
}

std::string interpreter_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = fs::path(info.param).filename();
  std::replace(name.begin(), name.end(), '.', '_');
  return name + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Installed, GpuPythonLaunchTest, ::testing::ValuesIn(installed_pythons()),
                         interpreter_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GpuPythonLaunchTest);

// Without an agent the library is dormant and silent; it does not need root.

TEST(GpuLibrary, WithoutAnAgentTheLibraryIsSilent) {
  Ran ran = run_program({FAKE_CUDA_DIR "/fake_cuda_app", "--rounds", "50", "--threads", "4"},
                        {"LD_LIBRARY_PATH=" FAKE_CUDA_DIR, "CUDA_INJECTION64_PATH=" CUPTI_LIBRARY});
  EXPECT_TRUE(ran.status.success()) << ran.err;
  EXPECT_EQ(ran.err, "");
  EXPECT_NE(ran.out.find("\"failures\": 0"), std::string::npos) << ran.out;
}

}  // namespace
}  // namespace dormant
