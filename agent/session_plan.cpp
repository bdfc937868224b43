#include "agent/session_plan.h"

#include <algorithm>
#include <cmath>

#include "agent/run_arguments.h"
#include "agent/work_directory.h"

namespace dormant::agent {
namespace {

// --perf-mode's walk; `disabled` is perf not running at all (cpu_profilers).
CallGraph call_graph_of(config::PerfMode mode) {
  switch (mode) {
    case config::PerfMode::kDwarf:
      return CallGraph::kDwarf;
    case config::PerfMode::kSmart:
      return CallGraph::kSmart;
    case config::PerfMode::kFp:
    case config::PerfMode::kDisabled:
      break;
  }
  return CallGraph::kFramePointer;
}

ProfilingTarget profiling_target(const config::AgentConfig& config) {
  ProfilingTarget target;
  target.frequency_hz = config.frequency_hz;
  target.pids = config.pids;
  target.skip_above_processes = config.skip_system_profilers_above;
  target.use_cgroups = config.perf_use_cgroups;
  target.max_cgroups = config.perf_max_cgroups;
  target.max_docker_containers = config.perf_max_docker_containers;
  return target;
}

PerfSettings perf_settings(const config::AgentConfig& config) {
  PerfSettings perf;
  perf.path = config.perf_path;
  perf.call_graph = call_graph_of(config.perf_mode);
  perf.events = config.perf_events;
  perf.dwarf_stack_size = config.perf_dwarf_stack_size;
  perf.restart_after = std::chrono::seconds(config.perf_restart_interval_s);
  perf.restart_above_rss_bytes = static_cast<uint64_t>(config.perf_restart_rss_mb) << 20;
  perf.script_timeout = std::chrono::seconds(config.perf_script_timeout_s);
  return perf;
}

EbpfSettings ebpf_settings(const config::AgentConfig& config) {
  EbpfSettings ebpf;
  ebpf.max_stacks = static_cast<uint32_t>(config.ebpf_stack_map_entries);
  ebpf.max_counted = static_cast<uint32_t>(config.ebpf_count_map_entries);
  ebpf.max_processes = static_cast<uint32_t>(config.ebpf_process_map_entries);
  ebpf.walk_by_tables = config.ebpf_unwind_tables;
  ebpf.unwind_table_bytes = static_cast<uint64_t>(config.ebpf_unwind_table_mb) << 20;
  for (int limit :
       {config.max_processes_runtime_profiler, config.python_skip_pyperf_profiler_above}) {
    if (limit > 0 && (ebpf.max_python_processes == 0 ||
                      static_cast<uint32_t>(limit) < ebpf.max_python_processes)) {
      ebpf.max_python_processes = static_cast<uint32_t>(limit);
    }
  }
  if (config.max_processes_runtime_profiler > 0) {
    ebpf.max_runtime_processes = static_cast<uint32_t>(config.max_processes_runtime_profiler);
  }
  return ebpf;
}

GpuSettings gpu_settings(const config::AgentConfig& config) {
  GpuSettings gpu;
  gpu.enabled = config.gpu_mode == GpuMode::kMerge || config.gpu_mode == GpuMode::kGpuOnly;
  gpu.start_deadline = std::chrono::milliseconds(std::llround(config.gpu_start_timeout_s * 1000));
  gpu.records_per_second = static_cast<uint64_t>(config.gpu_max_records_per_second);
  gpu.kernel_name_bytes = static_cast<uint32_t>(config.gpu_kernel_name_bytes);
  return gpu;
}

ProfilingSettings profiling_settings(const config::AgentConfig& config) {
  ProfilingSettings settings;
  settings.cpu =
      config.gpu_mode == GpuMode::kGpuOnly ? CpuProfilers::kNone : config::cpu_profilers(config);
  settings.target = profiling_target(config);
  settings.perf = perf_settings(config);
  settings.ebpf = ebpf_settings(config);
  settings.gpu = gpu_settings(config);
  settings.stop_deadline = config.profiler_stop_deadline();
  settings.work_dir = work_directory_of(config.state_dir).string();
  return settings;
}

}  // namespace

SessionPlan plan_session(const config::AgentConfig& config) {
  SessionPlan plan;
  plan.profiling = profiling_settings(config);
  plan.snapshot_every = std::chrono::seconds(config.duration_s);
  plan.continuous = config.continuous;
  plan.output_dir = config.output_dir;
  plan.rotating_output = config.rotating_output;
  auto wants = [&](std::string_view format) {
    return std::find(config.output_formats.begin(), config.output_formats.end(), format) !=
           config.output_formats.end();
  };
  plan.formats = {wants("collapsed"), wants("svg") && config.flamegraph, wants("pprof")};
  plan.profiling_mode = std::string(config::to_string(config.mode));
  plan.run_arguments = run_arguments(config);
  return plan;
}

}  // namespace dormant::agent
