#include "agent/session_builder.h"

#include "agent/first_that_starts.h"
#include "profilers/perf/perf_profiler.h"
#if DORMANT_WITH_EBPF
#include "profilers/ebpf/ebpf_profiler.h"
#endif

namespace dormant::agent {
namespace {

profilers::system::CgroupLimits cgroup_limits(const config::AgentConfig& config) {
  profilers::system::CgroupLimits limits;
  limits.max_cgroups = static_cast<size_t>(std::max(0, config.perf_max_cgroups));
  limits.max_docker_containers =
      static_cast<size_t>(std::max(0, config.perf_max_docker_containers));
  return limits;
}

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
  options.cgroup_limits = cgroup_limits(config);
  options.skip_above_processes = config.skip_system_profilers_above;
  options.restart_after = std::chrono::seconds(config.perf_restart_interval_s);
  options.restart_above_rss_bytes = static_cast<uint64_t>(config.perf_restart_rss_mb) << 20;
  options.script_timeout = std::chrono::seconds(config.perf_script_timeout_s);
  return options;
}

std::unique_ptr<profilers::Profiler> perf_profiler(const config::AgentConfig& config) {
  return std::make_unique<profilers::perf::PerfProfiler>(perf_options(config));
}

#if DORMANT_WITH_EBPF
std::unique_ptr<profilers::Profiler> ebpf_profiler(const config::AgentConfig& config) {
  profilers::ebpf::EbpfProfilerOptions options;
  options.frequency_hz = config.frequency_hz;
  options.pids = config.pids;
  options.skip_above_processes = config.skip_system_profilers_above;
  options.use_cgroups = config.perf_use_cgroups;
  options.cgroup_limits = cgroup_limits(config);
  options.limits.max_stacks = static_cast<uint32_t>(config.ebpf_stack_map_entries);
  options.limits.max_counted = static_cast<uint32_t>(config.ebpf_count_map_entries);
  options.limits.max_processes = static_cast<uint32_t>(config.ebpf_process_map_entries);
  return std::make_unique<profilers::ebpf::EbpfProfiler>(std::move(options));
}
#endif

}  // namespace

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(
    const config::AgentConfig& config) {
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  switch (config::cpu_profilers(config)) {
    case config::CpuProfilers::kNone:
      break;
    case config::CpuProfilers::kPerf:
      built.push_back(perf_profiler(config));
      break;
#if DORMANT_WITH_EBPF
    case config::CpuProfilers::kEbpf:
      built.push_back(ebpf_profiler(config));
      break;
    case config::CpuProfilers::kEbpfElsePerf: {
      std::vector<std::unique_ptr<profilers::Profiler>> candidates;
      candidates.push_back(ebpf_profiler(config));
      candidates.push_back(perf_profiler(config));
      built.push_back(std::make_unique<FirstThatStarts>(std::move(candidates)));
      break;
    }
#else
    case config::CpuProfilers::kEbpf:  // refused by validation in a build without eBPF
    case config::CpuProfilers::kEbpfElsePerf:
      built.push_back(perf_profiler(config));
      break;
#endif
  }
  return built;
}

}  // namespace dormant::agent
