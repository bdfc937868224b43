#include "agent/local_run.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "agent/profiler_set.h"
#include "agent/session_builder.h"
#include "agent/snapshot_output.h"
#include "common/deadline.h"
#include "common/exit_status.h"
#include "common/host_info.h"
#include "common/termination_signals.h"

namespace dormant::agent {
namespace {

// Waits until `until` or a termination signal; true if a signal came (see wait_for_termination:
// one that came while the agent was busy counts at once).
bool wait_for_signal(Deadline until) {
  int received = wait_for_termination(until);
  if (received == 0) return false;
  spdlog::info("{} received: finishing the current snapshot", signal_name(received));
  return true;
}

}  // namespace

int run_local_profiling(const config::AgentConfig& config) {
  agent_start();
  if (config.upload_results) {
    spdlog::warn(
        "-u/--upload-results uploads in heartbeat mode only, for now: this run writes "
        "to -o alone");
  }
  ProfilerSet profilers =
      ProfilerSet::start(build_profilers(config), config.profiler_stop_deadline());
  if (!profilers.any_running()) {
    spdlog::warn("no profiler is running: the profiles will hold no samples");
  }
  SnapshotOutput output(config, read_host_info(), nullptr);
  bool stopping = false;
  int exit_code = 0;
  while (!stopping) {
    auto begin = std::chrono::system_clock::now();
    HostUsageMeter usage;
    auto until = SteadyClock::now() + std::chrono::seconds(config.duration_s);
    stopping = wait_for_signal(until) || !config.continuous;
    profile::StackTable stacks = profilers.snapshot();
    // A signal during the snapshot's parsing ends the run after this profile, not after another.
    stopping = stopping || wait_for_signal(SteadyClock::now());
    if (!output.write(stacks, begin, usage.cpu_percent())) exit_code = 1;
  }
  profilers.stop(config.profiler_stop_deadline());
  return exit_code;
}

}  // namespace dormant::agent
