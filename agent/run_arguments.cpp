#include "agent/run_arguments.h"

namespace dormant::agent {

nlohmann::json run_arguments(const config::AgentConfig& c) {
  return {
      {"enable_heartbeat_server", c.enable_heartbeat_server},
      {"api_server", c.api_server},
      {"server_host", c.upload_server()},
      {"service_name", c.service_name},
      {"output_dir", c.output_dir},
      {"upload_results", c.upload_results},
      {"continuous", c.continuous},
      {"duration", c.duration_s},
      {"frequency", c.frequency_hz},
      {"profiling_mode", config::to_string(c.mode)},
      {"system_profiler", config::to_string(c.system_profiler)},
      {"gpu_mode", config::to_string(c.gpu_mode)},
      {"perf_mode", config::to_string(c.perf_mode)},
      {"perf_events", c.perf_events},
      {"perf_dwarf_stack_size", c.perf_dwarf_stack_size},
      {"perf_use_cgroups", c.perf_use_cgroups},
      {"perf_max_cgroups", c.perf_max_cgroups},
      {"perf_max_docker_containers", c.perf_max_docker_containers},
      {"skip_system_profilers_above", c.skip_system_profilers_above},
      {"max_processes_runtime_profiler", c.max_processes_runtime_profiler},
      {"python_skip_pyperf_profiler_above", c.python_skip_pyperf_profiler_above},
      {"profile_api_version", "v2"},
  };
}

}  // namespace dormant::agent
