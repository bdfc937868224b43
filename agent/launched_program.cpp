#include "agent/launched_program.h"

#include <chrono>
#include <csignal>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "agent/agent_directories.h"
#include "agent/module_loader.h"
#include "agent/profile_facts.h"
#include "agent/snapshot_loop.h"
#include "common/host_info.h"
#include "common/subprocess.h"
#include "common/termination_signals.h"

namespace dormant::agent {
namespace {

constexpr const char* kCuptiLibrary = "libdormant_cupti.so";
constexpr std::chrono::milliseconds kExitPoll{50};

// Waits until `until` for the program to exit (true), passing termination signals on to it.
bool wait_for_exit(Subprocess& program, SteadyClock::time_point until,
                   std::optional<ExitStatus>& status) {
  while (!(status = program.try_wait())) {
    auto now = SteadyClock::now();
    if (now >= until) return false;
    int received = wait_for_termination(std::min(until, now + kExitPoll));
    if (received != 0) {
      spdlog::info("{} received: passed on to {}", signal_name(received), program.program());
      signal_group(program.pid(), received);
    }
  }
  return true;
}

int exit_code_of(const ExitStatus& status) {
  return status.signaled ? 128 + status.signal : status.code;
}

}  // namespace

int run_launched_program(const config::AgentConfig& config) {
  agent_start();
  if (auto prepared = prepare_agent_directories(config); !prepared) {
    spdlog::error("{}", prepared.error().message());
    return 1;
  }
  SpawnOptions spawn;
  spawn.argv = config.launch_command;
  spawn.stdin_inherit = true;
  spawn.stdout_to = Redirect::inherit();
  spawn.stderr_to = Redirect::inherit();
  spawn.held = true;
  SessionPlan plan = plan_session(config);
  std::filesystem::path library =
      std::filesystem::absolute(installed_file(config.cupti_library, kCuptiLibrary));
  if (plan.profiling.gpu.enabled) {  // the modes that profile the GPU inject the library
    std::error_code error;
    if (!std::filesystem::is_regular_file(library, error)) {
      spdlog::error("--gpu-mode {} needs {} (not found: {}); --cupti-library names another",
                    config::to_string(config.gpu_mode), kCuptiLibrary, library.string());
      return 1;
    }
    spawn.env.push_back("CUDA_INJECTION64_PATH=" + library.string());
  }

  ModuleLoader modules(module_path(config.profiler_module));
  auto loaded = modules.acquire();
  if (!loaded) {
    spdlog::error("{}", loaded.error().message());
    return 1;
  }
  auto program = Subprocess::spawn(spawn);
  if (!program) {
    spdlog::error("{}", program.error().message());
    return 127;
  }
  HostInfo host = read_host_info();
  plan.profiling.target.pids = {(*program)->pid()};
  if (plan.profiling.gpu.enabled) plan.profiling.gpu.libraries = {library.string()};
  plan.continuous = false;
  plan.snapshot_every = std::chrono::hours(24 * 365);  // one profile, ended by the exit
  auto session = (*loaded)->profilers().start_session(plan.profiling, profile_facts(plan, host));
  if (!session->any_running()) {
    spdlog::warn("no profiler is running: the profile will hold no samples");
  }
  if (auto released = (*program)->release(); !released) {
    spdlog::error("{}", released.error().message());
    session->stop();
    return 127;
  }
  spdlog::info("profiling {} (pid {}) until it exits", config.launch_command.front(),
               (*program)->pid());
  std::optional<ExitStatus> status;
  SnapshotOutput output(plan, host.hostname, nullptr);
  auto ran = run_snapshot_loop(*session, output, plan, [&](SteadyClock::time_point until) {
    return wait_for_exit(**program, until, status);
  });
  if (session->stop().abandoned_a_stop) (*loaded)->keep_loaded();
  if (!status) {
    auto waited = (*program)->wait();
    status = waited ? *waited : ExitStatus{.code = 1};
  }
  spdlog::info("{} {}", config.launch_command.front(), status->describe());
  if (!ran.all_delivered) return 1;
  return exit_code_of(*status);
}

}  // namespace dormant::agent
