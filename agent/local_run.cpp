#include "agent/local_run.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "agent/agent_directories.h"
#include "agent/module_loader.h"
#include "agent/profile_facts.h"
#include "agent/snapshot_loop.h"
#include "common/deadline.h"
#include "common/exit_status.h"
#include "common/host_info.h"
#include "common/termination_signals.h"

namespace dormant::agent {
namespace {

// Waits until `until` or a termination signal; true if a signal came (see wait_for_termination:
// one that came while the agent was busy counts at once).
bool wait_for_signal(SteadyClock::time_point until) {
  int received = wait_for_termination(until);
  if (received == 0) return false;
  spdlog::info("{} received: finishing the current snapshot", signal_name(received));
  return true;
}

}  // namespace

int run_local_profiling(const config::AgentConfig& config) {
  agent_start();
  if (auto prepared = prepare_agent_directories(config); !prepared) {
    spdlog::error("{}", prepared.error().message());
    return 1;
  }
  if (config.upload_results) {
    spdlog::warn(
        "-u/--upload-results uploads in heartbeat mode only, for now: this run writes "
        "to -o alone");
  }
  ModuleLoader modules(module_path(config.profiler_module));
  auto loaded = modules.acquire();
  if (!loaded) {
    spdlog::error("{}", loaded.error().message());
    return 1;
  }
  HostInfo host = read_host_info();
  SessionPlan plan = plan_session(config);
  auto session = (*loaded)->profilers().start_session(plan.profiling, profile_facts(plan, host));
  if (!session->any_running()) {
    spdlog::warn("no profiler is running: the profiles will hold no samples");
  }
  SnapshotOutput output(plan, host.hostname, nullptr);
  auto ran = run_snapshot_loop(*session, output, plan, wait_for_signal);
  if (session->stop().abandoned_a_stop) (*loaded)->keep_loaded();
  return ran.all_delivered ? 0 : 1;
}

}  // namespace dormant::agent
