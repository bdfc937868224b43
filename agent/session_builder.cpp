#include "agent/session_builder.h"

#include "profilers/perf/perf_profiler.h"

namespace dormant::agent {
namespace {

profilers::perf::PerfProfilerOptions perf_options(const config::AgentConfig& config) {
  using profilers::perf::CallGraph;
  profilers::perf::PerfProfilerOptions options;
  options.perf_path = config.perf_path;
  options.frequency_hz = config.frequency_hz;
  options.call_graph = config.perf_mode == config::PerfMode::kDwarf   ? CallGraph::kDwarf
                       : config.perf_mode == config::PerfMode::kSmart ? CallGraph::kSmart
                                                                      : CallGraph::kFramePointer;
  options.dwarf_stack_size = config.perf_dwarf_stack_size;
  options.pids = config.pids;
  options.use_cgroups = config.perf_use_cgroups;
  options.max_cgroups = config.perf_max_cgroups;
  options.max_docker_containers = config.perf_max_docker_containers;
  options.skip_above_processes = config.skip_system_profilers_above;
  options.restart_after = std::chrono::seconds(config.perf_restart_interval_s);
  options.restart_above_rss_bytes = static_cast<uint64_t>(config.perf_restart_rss_mb) << 20;
  options.script_timeout = std::chrono::seconds(config.perf_script_timeout_s);
  return options;
}

}  // namespace

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(
    const config::AgentConfig& config) {
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  if (config.mode == config::ProfilingMode::kCpu &&
      config.perf_mode != config::PerfMode::kDisabled) {
    built.push_back(std::make_unique<profilers::perf::PerfProfiler>(perf_options(config)));
  }
  return built;
}

}  // namespace dormant::agent
