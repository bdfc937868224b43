#include "agent/command_settings.h"

namespace dormant::agent {
namespace {

config::ProfilingMode mode_of(heartbeat::ProfilingMode mode) {
  switch (mode) {
    case heartbeat::ProfilingMode::kCpu:
      return config::ProfilingMode::kCpu;
    case heartbeat::ProfilingMode::kAllocation:
      return config::ProfilingMode::kAllocation;
    case heartbeat::ProfilingMode::kNone:
      return config::ProfilingMode::kNone;
  }
  return config::ProfilingMode::kCpu;
}

module::CpuProfilers cpu_profilers_of(const config::AgentConfig& config) {
  switch (config::cpu_profilers(config)) {
    case config::CpuProfilers::kNone:
      return module::CpuProfilers::kNone;
    case config::CpuProfilers::kEbpf:
      return module::CpuProfilers::kEbpf;
    case config::CpuProfilers::kPerf:
      return module::CpuProfilers::kPerf;
    case config::CpuProfilers::kEbpfElsePerf:
      return module::CpuProfilers::kEbpfElsePerf;
  }
  return module::CpuProfilers::kNone;
}

}  // namespace

module::SessionSettings session_settings(const config::AgentConfig& config) {
  module::SessionSettings settings;
  settings.cpu = cpu_profilers_of(config);
  settings.frequency_hz = config.frequency_hz;
  settings.pids = config.pids;
  settings.skip_above_processes = config.skip_system_profilers_above;
  settings.use_cgroups = config.perf_use_cgroups;
  settings.max_cgroups = config.perf_max_cgroups;
  settings.max_docker_containers = config.perf_max_docker_containers;
  settings.perf_path = config.perf_path;
  settings.call_graph = config.perf_mode == config::PerfMode::kDwarf ? module::CallGraph::kDwarf
                        : config.perf_mode == config::PerfMode::kSmart
                            ? module::CallGraph::kSmart
                            : module::CallGraph::kFramePointer;
  settings.dwarf_stack_size = config.perf_dwarf_stack_size;
  settings.perf_restart_after = std::chrono::seconds(config.perf_restart_interval_s);
  settings.perf_restart_above_rss_bytes = static_cast<uint64_t>(config.perf_restart_rss_mb) << 20;
  settings.perf_script_timeout = std::chrono::seconds(config.perf_script_timeout_s);
  settings.ebpf_max_stacks = static_cast<uint32_t>(config.ebpf_stack_map_entries);
  settings.ebpf_max_counted = static_cast<uint32_t>(config.ebpf_count_map_entries);
  settings.ebpf_max_processes = static_cast<uint32_t>(config.ebpf_process_map_entries);
  settings.stop_deadline = config.profiler_stop_deadline();
  return settings;
}

Result<config::AgentConfig> settings_for(const config::AgentConfig& agent,
                                         const heartbeat::CommandConfig& command) {
  config::AgentConfig session = agent;
  session.duration_s = command.duration;
  session.frequency_hz = command.frequency;
  session.mode = mode_of(command.profiling_mode);
  session.pids = command.pids;
  session.continuous = command.continuous;
  session.max_processes_runtime_profiler = command.max_processes;
  if (command.perf) {
    switch (command.perf->setting) {
      case heartbeat::PerfSetting::kEnabledRestricted:
        session.skip_system_profilers_above = agent.heartbeat_perf_restricted_max_processes;
        session.perf_max_docker_containers = agent.heartbeat_perf_restricted_max_containers;
        break;
      case heartbeat::PerfSetting::kEnabledAggressive:
        session.skip_system_profilers_above = agent.heartbeat_perf_aggressive_max_processes;
        session.perf_max_docker_containers = agent.heartbeat_perf_aggressive_max_containers;
        break;
      case heartbeat::PerfSetting::kDisabled:
        // Studio's "no system profiler": eBPF is off too, unless the command asks for it below.
        session.perf_mode = config::PerfMode::kDisabled;
        session.system_profiler = config::SystemProfiler::kDisabled;
        break;
    }
  }
  if (command.ebpf == heartbeat::EbpfSetting::kEnabled) {
    session.system_profiler = config::SystemProfiler::kEbpf;
    session.perf_mode = config::PerfMode::kFp;  // perf's unwinding modes do not apply to eBPF
  } else if (command.ebpf == heartbeat::EbpfSetting::kDisabled &&
             session.system_profiler != config::SystemProfiler::kDisabled) {
    session.system_profiler = config::SystemProfiler::kPerf;
  }
  if (auto valid = config::validate(session); !valid) {
    return std::move(valid).take_error().with_context("the command's settings");
  }
  return session;
}

}  // namespace dormant::agent
