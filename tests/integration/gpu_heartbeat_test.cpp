// GPU profiling in heartbeat mode, on the fake CUDA stack: a CUDA program runs with
// libdormant_cupti.so injected (dormant), start commands attach to it and stop commands detach,
// and through it all the program runs on unharmed.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dormant_cupti/launch_apis.h"
#include "fake_cupti_state.h"
#include "heartbeat_fixture.h"

#include "common/procfs.h"
#include "profile/collapsed.h"

namespace dormant::testing {
namespace {

class GpuHeartbeatTest : public HeartbeatFixture {
 protected:
  void TearDown() override {
    if (program_) {
      std::ofstream(root_ / "stop-launching").put('\n');
      (void)program_->wait(deadline_after(30s));
      program_.reset();
    }
    HeartbeatFixture::TearDown();
  }

  // The fake CUDA program, launching until the test says stop, its output in program.out.
  // With `preload`, the library comes by LD_PRELOAD rather than CUDA_INJECTION64_PATH.
  void start_program(std::vector<std::string> extra = {}, bool preload = false) {
    SpawnOptions options;
    options.argv = {FAKE_CUDA_DIR "/fake_cuda_app", "--until-file",
                    (root_ / "stop-launching").string(), "--pause-us", "200"};
    options.argv.insert(options.argv.end(), extra.begin(), extra.end());
    options.env = {"LD_LIBRARY_PATH=" FAKE_CUDA_DIR,
                   preload ? "LD_PRELOAD=" CUPTI_LIBRARY : "CUDA_INJECTION64_PATH=" CUPTI_LIBRARY,
                   "FAKE_CUPTI_STATE_FILE=" + (root_ / "cupti.state").string()};
    options.stdout_to = Redirect::file(root_ / "program.out");
    options.stderr_to = Redirect::file(root_ / "program.err");
    auto program = Subprocess::spawn(options);
    ASSERT_TRUE(program.ok()) << program.error().message();
    program_ = std::move(*program);
    // The library is mapped before the fake CUPTI installs its SIGUSR1 handler: cupti_state()'s
    // signal would end the program in between.
    ASSERT_TRUE(eventually(
        [&] { return maps_library(program_->pid()) && catches_sigusr1(program_->pid()); }, 10s));
  }

  // What the program's (fake) CUPTI has on: "callbacks=C kinds=K buffers=B".
  std::string cupti_state() { return fake_cupti_state(program_->pid(), root_ / "cupti.state"); }
  bool dormant() {
    return eventually([&] { return cupti_state() == kDormant; }, 10s);
  }
  static constexpr const char* kDormant = kFakeCuptiDormant;

  static bool maps_library(pid_t pid) {
    auto mapped = procfs::mapped_files(pid);
    if (!mapped) return false;
    for (const auto& file : *mapped) {
      if (file.find("libdormant_cupti.so") != std::string::npos) return true;
    }
    return false;
  }

  // Ends the program: it must exit 0, every CUDA call having succeeded.
  void finish_program() {
    std::ofstream(root_ / "stop-launching").put('\n');
    auto status = program_->wait(deadline_after(30s));
    ASSERT_TRUE(status.ok());
    EXPECT_TRUE(status->success()) << status->describe() << "\n"
                                   << read_file(root_ / "program.err").value_or("");
    EXPECT_NE(read_file(root_ / "program.out").value_or("").find("\"failures\": 0"),
              std::string::npos);
    EXPECT_EQ(read_file(root_ / "program.err").value_or(""), "") << "the library spoke";
    program_.reset();
  }

  std::string start_gpu(const std::string& mode, int duration, bool continuous = true) {
    return request("start", {{"continuous", continuous},
                             {"duration", duration},
                             {"frequency", 100},
                             {"additional_args", {{"profiler_configs", {{"gpu", mode}}}}}});
  }

  std::unique_ptr<Subprocess> program_;
};

TEST_F(GpuHeartbeatTest, AStartAttachesToARunningProgramAndAStopLeavesItDormant) {
  start_server();
  start_program();
  EXPECT_TRUE(dormant()) << cupti_state();
  start_agent();
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  std::string start = start_gpu("gpu-only", 2);
  ASSERT_TRUE(command_reaches(start, "completed", 30s)) << command_status(start) << agent_log();
  // Attached: the launch callbacks and kernel, memcpy and memset recording are on.
  const std::string on = "callbacks=" + std::to_string(std::size(cupti::kLaunchApis)) + " kinds=3";
  EXPECT_TRUE(eventually([&] { return cupti_state().starts_with(on); }, 10s)) << cupti_state();
  ASSERT_TRUE(eventually([&] { return fs::exists(root_ / "out" / "last_profile.col"); }, 30s))
      << agent_log();
  auto profile = profile::read_collapsed(read_file(root_ / "out" / "last_profile.col").value());
  ASSERT_TRUE(profile.ok()) << profile.error().message();
  uint64_t gpu_samples = 0;
  bool under_launch_site = true;
  profile->stacks.for_each([&](const profile::StackView& stack) {
    std::vector<std::string_view> frames;
    for (auto id : stack.frame_ids) frames.push_back(profile->stacks.string(id));
    if (frames.empty() || !frames.back().starts_with("[GPU] ")) return;
    gpu_samples += stack.count;
    std::string site = "launch_site_" + std::string(frames.back().substr(6, 4));
    if (site == "launch_site_gamm") site += "a";
    bool found = false;
    for (auto frame : frames) found = found || frame.find(site) != std::string_view::npos;
    under_launch_site = under_launch_site && found;
  });
  EXPECT_GT(gpu_samples, 0u);
  EXPECT_TRUE(under_launch_site);
  EXPECT_TRUE(profile->header["gpu"].is_object()) << profile->header.dump();

  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed", 30s));
  ASSERT_TRUE(back_to_idle()) << agent_log();
  EXPECT_EQ(log_count("teardown audit:"), 0) << agent_log();
  // Detached: callbacks and recording off, no buffer held.
  EXPECT_TRUE(dormant()) << cupti_state();
  json gpu = agent_health()["profilers"]["gpu"];
  EXPECT_EQ(gpu["available"], true) << gpu.dump();
  EXPECT_GT(gpu["last_snapshot"]["launches"].get<uint64_t>(), 0u) << gpu.dump();

  // A command with the GPU disabled profiles the CPU and leaves the program alone.
  std::string disabled = start_gpu("disabled", 1, /*continuous=*/false);
  ASSERT_TRUE(command_reaches(disabled, "completed", 30s)) << agent_log();
  ASSERT_TRUE(back_to_idle());
  EXPECT_EQ(log_count("gpu: attached"), 1) << agent_log();
  EXPECT_EQ(cupti_state(), kDormant);
  finish_program();
}

TEST_F(GpuHeartbeatTest, APreloadedLibraryWorksAsAnInjectedOne) {
  start_server();
  start_program({}, /*preload=*/true);
  EXPECT_TRUE(dormant()) << cupti_state();
  start_agent();
  std::string start = start_gpu("gpu-only", 1, /*continuous=*/false);
  ASSERT_TRUE(command_reaches(start, "completed", 30s)) << agent_log();
  ASSERT_TRUE(eventually([&] { return fs::exists(root_ / "out" / "last_profile.col"); }, 30s));
  auto profile = profile::read_collapsed(read_file(root_ / "out" / "last_profile.col").value());
  ASSERT_TRUE(profile.ok());
  EXPECT_GT(profile->header["gpu"]["joined"].get<uint64_t>(), 0u) << profile->header.dump();
  ASSERT_TRUE(back_to_idle());
  EXPECT_TRUE(dormant()) << cupti_state();
  finish_program();
}

TEST_F(GpuHeartbeatTest, StartsAndStopsAgainstOneRunningProgramLeaveNothingBehind) {
  const int kCycles = cycles_wanted();
  start_server();
  start_program({"--threads", "2"});
  start_agent(agent_args(server_->port(), "0.2", "info"));
  ASSERT_TRUE(eventually([&] { return agent_health()["idle_baseline"].is_object(); }, 30s))
      << agent_log();
  json baseline = agent_health()["idle_baseline"];
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    json gpu = {{"gpu", cycle % 2 == 0 ? "gpu-only" : "merge"}};
    ASSERT_NO_FATAL_FAILURE(start_and_stop(cycle, gpu, 100));
  }
  EXPECT_EQ(log_count("teardown audit:"), 0) << "the audit found leaks\n" << agent_log();
  EXPECT_EQ(log_count("gpu: attached"), kCycles);
  json after = agent_health()["last_teardown_audit"]["after"];
  for (const char* key : {"open_fds", "children", "threads", "bpf_objects", "perf_events"}) {
    EXPECT_EQ(after[key], baseline[key]) << key;
  }
  EXPECT_TRUE(dormant()) << cupti_state();
  finish_program();
}

TEST_F(GpuHeartbeatTest, AnAgentStoppedMidSessionLeavesTheProgramRunningAndDormant) {
  start_server();
  start_program();
  start_agent();
  std::string start = start_gpu("gpu-only", 60);
  ASSERT_TRUE(command_reaches(start, "completed", 30s)) << agent_log();
  ASSERT_TRUE(eventually([&] { return cupti_state() != kDormant; }, 10s));
  stop_agent();
  EXPECT_TRUE(dormant()) << cupti_state();
  finish_program();
}

TEST_F(GpuHeartbeatTest, AProgramThatExitsMidSessionEndsNothing) {
  start_server();
  start_program();
  start_agent();
  std::string start = start_gpu("merge", 1);
  ASSERT_TRUE(command_reaches(start, "completed", 30s)) << agent_log();
  finish_program();
  int profiles = static_cast<int>(server_profiles());
  ASSERT_TRUE(eventually([&] { return static_cast<int>(server_profiles()) >= profiles + 2; }, 30s))
      << "the session stopped taking snapshots\n"
      << agent_log();
  std::string stop = request("stop", {{"stop_level", "host"}});
  ASSERT_TRUE(command_reaches(stop, "completed", 30s));
  ASSERT_TRUE(back_to_idle()) << agent_log();
  EXPECT_EQ(log_count("teardown audit:"), 0) << agent_log();
}

TEST_F(GpuHeartbeatTest, WithoutAnInjectedProgramGpuOnlyFailsSayingWhyAndMergeRunsTheCpu) {
  start_server();
  start_agent();
  std::string gpu_only = start_gpu("gpu-only", 60);
  ASSERT_TRUE(command_reaches(gpu_only, "failed", 30s)) << command_status(gpu_only) << "\n"
                                                        << agent_log();
  json command = server_->get("/api/commands/" + gpu_only).json();
  EXPECT_NE(command.dump().find("no running program has libdormant_cupti.so loaded"),
            std::string::npos)
      << command.dump();
  ASSERT_TRUE(back_to_idle());

  std::string merge = start_gpu("merge", 1, /*continuous=*/false);
  ASSERT_TRUE(command_reaches(merge, "completed", 30s)) << agent_log();
  ASSERT_TRUE(eventually([&] { return fs::exists(root_ / "out" / "last_profile.col"); }, 30s));
  std::string text = read_file(root_ / "out" / "last_profile.col").value();
  EXPECT_EQ(text.find("[Profiling gpu"), std::string::npos) << "an optional profiler marked it";
  ASSERT_TRUE(back_to_idle());
  json gpu = agent_health()["profilers"]["gpu"];
  EXPECT_EQ(gpu["available"], false) << gpu.dump();
  EXPECT_NE(gpu["reason"].get<std::string>().find("libdormant_cupti.so"), std::string::npos);
}

}  // namespace
}  // namespace dormant::testing
