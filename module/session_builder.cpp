#include "module/session_builder.h"

#include "module/first_that_starts.h"
#include "profilers/perf/perf_profiler.h"
#if DORMANT_WITH_EBPF
#include "profilers/ebpf/ebpf_profiler.h"
#include "profilers/gpu/gpu_profiler.h"
#endif

namespace dormant::module {
namespace {

profilers::system::CgroupLimits cgroup_limits(const SessionSettings& settings) {
  profilers::system::CgroupLimits limits;
  limits.max_cgroups = static_cast<size_t>(std::max(0, settings.max_cgroups));
  limits.max_docker_containers = static_cast<size_t>(std::max(0, settings.max_docker_containers));
  return limits;
}

std::unique_ptr<profilers::Profiler> perf_profiler(const SessionSettings& settings) {
  profilers::perf::PerfProfilerOptions options;
  options.perf_path = settings.perf_path;
  options.frequency_hz = settings.frequency_hz;
  options.call_graph = settings.call_graph;
  options.dwarf_stack_size = settings.dwarf_stack_size;
  options.pids = settings.pids;
  options.use_cgroups = settings.use_cgroups;
  options.cgroup_limits = cgroup_limits(settings);
  options.skip_above_processes = settings.skip_above_processes;
  options.restart_after = settings.perf_restart_after;
  options.restart_above_rss_bytes = settings.perf_restart_above_rss_bytes;
  options.script_timeout = settings.perf_script_timeout;
  options.events = settings.perf_events;
  options.known_event = settings.perf_event;
  if (!settings.work_dir.empty()) options.temp_root = settings.work_dir;
  return std::make_unique<profilers::perf::PerfProfiler>(std::move(options));
}

#if DORMANT_WITH_EBPF
std::unique_ptr<profilers::Profiler> ebpf_profiler(const SessionSettings& settings) {
  profilers::ebpf::EbpfProfilerOptions options;
  options.frequency_hz = settings.frequency_hz;
  options.pids = settings.pids;
  options.skip_above_processes = settings.skip_above_processes;
  options.use_cgroups = settings.use_cgroups;
  options.cgroup_limits = cgroup_limits(settings);
  options.limits.max_stacks = settings.ebpf_max_stacks;
  options.limits.max_counted = settings.ebpf_max_counted;
  options.limits.max_processes = settings.ebpf_max_processes;
  options.limits.walk_by_tables = settings.ebpf_walk_by_tables;
  options.unwind.max_table_bytes = settings.ebpf_unwind_table_bytes;
  options.max_python_processes = settings.max_python_processes;
  options.max_runtime_processes = settings.max_runtime_processes;
  return std::make_unique<profilers::ebpf::EbpfProfiler>(std::move(options));
}

std::unique_ptr<profilers::Profiler> gpu_profiler(const SessionSettings& settings) {
  profilers::gpu::GpuProfilerOptions options;
  options.frequency_hz = settings.frequency_hz;
  options.pids = settings.pids;
  options.libraries.assign(settings.gpu_libraries.begin(), settings.gpu_libraries.end());
  options.start_deadline = settings.gpu_start_deadline;
  options.records_per_second = settings.gpu_records_per_second;
  options.kernel_name_bytes = settings.gpu_kernel_name_bytes;
  return std::make_unique<profilers::gpu::GpuProfiler>(std::move(options));
}
#endif

}  // namespace

std::vector<std::unique_ptr<profilers::Profiler>> build_profilers(const SessionSettings& settings) {
  std::vector<std::unique_ptr<profilers::Profiler>> built;
  switch (settings.cpu) {
    case CpuProfilers::kNone:
      break;
    case CpuProfilers::kPerf:
      built.push_back(perf_profiler(settings));
      break;
#if DORMANT_WITH_EBPF
    case CpuProfilers::kEbpf:
      built.push_back(ebpf_profiler(settings));
      break;
    case CpuProfilers::kEbpfElsePerf: {
      std::vector<std::unique_ptr<profilers::Profiler>> candidates;
      candidates.push_back(ebpf_profiler(settings));
      candidates.push_back(perf_profiler(settings));
      built.push_back(std::make_unique<FirstThatStarts>(std::move(candidates)));
      break;
    }
#else
    case CpuProfilers::kEbpf:  // refused by the agent's validation in a build without eBPF
    case CpuProfilers::kEbpfElsePerf:
      built.push_back(perf_profiler(settings));
      break;
#endif
  }
#if DORMANT_WITH_EBPF
  if (settings.gpu) built.push_back(gpu_profiler(settings));
#endif
  return built;
}

}  // namespace dormant::module
