#include "agent/command_settings.h"

namespace dormant::agent {
Result<SessionPlan> plan_for_command(const config::AgentConfig& agent,
                                     const wire::CommandConfig& command) {
  config::AgentConfig session = agent;
  session.duration_s = command.duration;
  session.frequency_hz = command.frequency;
  session.mode = command.profiling_mode;
  session.pids = command.pids;
  session.continuous = command.continuous;
  if (command.perf) {
    session.perf_events = command.perf->events;
    switch (command.perf->setting) {
      case wire::PerfSetting::kEnabledRestricted:
        session.skip_system_profilers_above = agent.heartbeat_perf_restricted_max_processes;
        session.perf_max_docker_containers = agent.heartbeat_perf_restricted_max_containers;
        break;
      case wire::PerfSetting::kEnabledAggressive:
        session.skip_system_profilers_above = agent.heartbeat_perf_aggressive_max_processes;
        session.perf_max_docker_containers = agent.heartbeat_perf_aggressive_max_containers;
        break;
      case wire::PerfSetting::kDisabled:
        // Studio's "no system profiler": eBPF is off too, unless the command asks for it below.
        session.perf_mode = config::PerfMode::kDisabled;
        session.system_profiler = config::SystemProfiler::kDisabled;
        break;
    }
  }
  if (command.ebpf == wire::EbpfSetting::kEnabled) {
    session.system_profiler = config::SystemProfiler::kEbpf;
    session.perf_mode = config::PerfMode::kFp;  // perf's unwinding modes do not apply to eBPF
  } else if (command.ebpf == wire::EbpfSetting::kDisabled &&
             session.system_profiler != config::SystemProfiler::kDisabled) {
    session.system_profiler = config::SystemProfiler::kPerf;
  }
  if (command.gpu) session.gpu_mode = *command.gpu;
  if (auto valid = config::validate(session); !valid) {
    return std::move(valid).take_error().with_context("the command's settings");
  }
  return plan_session(session);
}

}  // namespace dormant::agent
