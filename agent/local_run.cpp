#include "agent/local_run.h"

#include <chrono>
#include <fstream>

#include <spdlog/spdlog.h>

#include "agent/local_output.h"
#include "agent/run_arguments.h"
#include "agent/session_builder.h"
#include "common/deadline.h"
#include "common/exit_status.h"
#include "common/host_info.h"
#include "common/termination_signals.h"
#include "profile/profile_header.h"

namespace dormant::agent {
namespace {

using profilers::Profiler;

// Waits until `until` or a termination signal; true if a signal came (see wait_for_termination:
// one that came while the agent was busy counts at once).
bool wait_for_signal(Deadline until) {
  int received = wait_for_termination(until);
  if (received == 0) return false;
  spdlog::info("{} received: finishing the current snapshot", signal_name(received));
  return true;
}

uint64_t uptime_ms() {
  std::ifstream uptime("/proc/uptime");
  double seconds = 0;
  uptime >> seconds;
  return static_cast<uint64_t>(seconds * 1000);
}

// The marker gProfiler puts in a profile for a profiler that produced nothing.
void add_error_marker(profile::StackTable& stacks, std::string_view profiler,
                      const std::string& reason) {
  std::string frame = "[Profiling " + std::string(profiler) + ": " + reason + "]";
  std::string_view frames[] = {frame};
  stacks.add("", profiler, frames, 1);
}

}  // namespace

int run_local_profiling(const config::AgentConfig& config) {
  HostInfo host = read_host_info();
  profile::SnapshotInfo snapshot_info;
  snapshot_info.agent_version = DORMANT_VERSION;
  snapshot_info.spawn_time =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  snapshot_info.spawn_uptime_ms = uptime_ms();
  snapshot_info.run_arguments = run_arguments(config);
  snapshot_info.profiling_mode = std::string(config::to_string(config.mode));

  std::vector<std::unique_ptr<Profiler>> running;
  std::vector<std::pair<std::string, std::string>> not_running;  // profiler, reason
  for (auto& profiler : build_profilers(config)) {
    if (auto started = profiler->start(); started) {
      running.push_back(std::move(profiler));
    } else {
      bool skipped = started.error().kind() == ErrorKind::kUnavailable;
      spdlog::log(skipped ? spdlog::level::warn : spdlog::level::err, "{}: {}", profiler->name(),
                  started.error().message());
      not_running.emplace_back(profiler->name(), started.error().message());
    }
  }
  if (running.empty()) spdlog::warn("no profiler is running: the profiles will hold no samples");

  LocalOutput output(config.output_dir, config.rotating_output, config.flamegraph);
  bool stopping = false;
  int exit_code = 0;
  while (!stopping) {
    HostUsageMeter usage;
    auto until = SteadyClock::now() + std::chrono::seconds(config.duration_s);
    stopping = wait_for_signal(until) || !config.continuous;

    profile::StackTable stacks;
    for (auto& profiler : running) {
      auto snapshot = profiler->snapshot();
      if (snapshot) {
        stacks.merge(*snapshot);
      } else {
        spdlog::error("{}: {}", profiler->name(), snapshot.error().message());
        add_error_marker(stacks, profiler->name(), snapshot.error().message());
      }
    }
    for (const auto& [name, reason] : not_running) add_error_marker(stacks, name, reason);
    // A signal during the snapshot's parsing ends the run after this profile, not after another.
    stopping = stopping || wait_for_signal(SteadyClock::now());

    snapshot_info.current_time = std::chrono::system_clock::now();
    snapshot_info.cpu_avg = usage.cpu_percent();
    snapshot_info.mem_avg = HostUsageMeter::memory_percent();
    snapshot_info.containers = stacks.containers();
    auto written = output.write(stacks, profile::make_profile_header(host, snapshot_info),
                                snapshot_info.current_time, "Dormant: " + host.hostname);
    if (written) {
      spdlog::info(
          "wrote {} ({} samples){}", written->collapsed.string(), stacks.total_samples(),
          written->flamegraph.empty() ? "" : ", flamegraph " + written->flamegraph.string());
    } else {
      spdlog::error("could not write the profile: {}", written.error().message());
      exit_code = 1;
    }
  }
  for (auto& profiler : running) profiler->stop();
  return exit_code;
}

}  // namespace dormant::agent
