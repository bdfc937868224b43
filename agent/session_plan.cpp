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

module::SessionSettings profiling_settings(const config::AgentConfig& config) {
  module::SessionSettings settings;
  settings.cpu =
      config.gpu_mode == GpuMode::kGpuOnly ? CpuProfilers::kNone : config::cpu_profilers(config);
  settings.gpu = config.gpu_mode == GpuMode::kMerge || config.gpu_mode == GpuMode::kGpuOnly;
  settings.frequency_hz = config.frequency_hz;
  settings.pids = config.pids;
  settings.skip_above_processes = config.skip_system_profilers_above;
  settings.use_cgroups = config.perf_use_cgroups;
  settings.max_cgroups = config.perf_max_cgroups;
  settings.max_docker_containers = config.perf_max_docker_containers;
  settings.perf_path = config.perf_path;
  settings.call_graph = call_graph_of(config.perf_mode);
  settings.perf_events = config.perf_events;
  settings.dwarf_stack_size = config.perf_dwarf_stack_size;
  settings.perf_restart_after = std::chrono::seconds(config.perf_restart_interval_s);
  settings.perf_restart_above_rss_bytes = static_cast<uint64_t>(config.perf_restart_rss_mb) << 20;
  settings.perf_script_timeout = std::chrono::seconds(config.perf_script_timeout_s);
  settings.ebpf_max_stacks = static_cast<uint32_t>(config.ebpf_stack_map_entries);
  settings.ebpf_max_counted = static_cast<uint32_t>(config.ebpf_count_map_entries);
  settings.ebpf_max_processes = static_cast<uint32_t>(config.ebpf_process_map_entries);
  settings.ebpf_walk_by_tables = config.ebpf_unwind_tables;
  for (int limit :
       {config.max_processes_runtime_profiler, config.python_skip_pyperf_profiler_above}) {
    if (limit > 0 && (settings.max_python_processes == 0 ||
                      static_cast<uint32_t>(limit) < settings.max_python_processes)) {
      settings.max_python_processes = static_cast<uint32_t>(limit);
    }
  }
  if (config.max_processes_runtime_profiler > 0) {
    settings.max_runtime_processes = static_cast<uint32_t>(config.max_processes_runtime_profiler);
  }
  settings.ebpf_unwind_table_bytes = static_cast<uint64_t>(config.ebpf_unwind_table_mb) << 20;
  settings.gpu_start_deadline =
      std::chrono::milliseconds(std::llround(config.gpu_start_timeout_s * 1000));
  settings.gpu_records_per_second = static_cast<uint64_t>(config.gpu_max_records_per_second);
  settings.gpu_kernel_name_bytes = static_cast<uint32_t>(config.gpu_kernel_name_bytes);
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
