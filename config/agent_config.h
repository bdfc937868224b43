// The agent's configuration: gProfiler's flag names and defaults, from the command line,
// DORMANT_* environment variables and a config file (in that order of precedence).
#pragma once

#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/profiler_choices.h"
#include "common/profiling_mode.h"
#include "common/result.h"
#include "config/exit_request.h"

namespace dormant::config {

enum class PerfMode { kFp, kDwarf, kSmart, kDisabled };
// Which CPU profiler samples the host: eBPF where it loads and perf otherwise (auto), one of
// them only, or none.
enum class SystemProfiler { kAuto, kEbpf, kPerf, kDisabled };

// config::ProfilingMode, GpuMode and to_string(mode), as the agent names them.
using ::dormant::CpuProfilers;
using ::dormant::GpuMode;
using ::dormant::ProfilingMode;
using ::dormant::to_string;

std::string_view to_string(PerfMode mode);
std::string_view to_string(SystemProfiler profiler);

struct AgentConfig {
  // Heartbeat, server connection and TLS.
  bool enable_heartbeat_server = false;
  // Heartbeats and command completions: one URL or several, comma-separated, that the agent
  // fails over between (config/server_urls.h splits them).
  std::string api_server;
  std::string server_host;           // profile uploads, the same form; empty: same as api_server
  double heartbeat_interval_s = 30;  // fractions allowed, for tests and labs
  int server_upload_timeout_s = 120;
  std::string token;
  std::string token_file;  // read into token by parse_agent_args
  std::string service_name;
  bool no_verify = false;
  bool allow_insecure_http = false;  // http:// to a server beyond this machine
  std::string tls_ca_bundle;
  std::string tls_client_cert;
  std::string tls_client_key;
  std::string state_dir = "/var/lib/dormant";
  int spool_max_mb = 100;
  int spool_max_files = 10'000;
  int heartbeat_perf_restricted_max_processes = 600;
  int heartbeat_perf_restricted_max_containers = 2;
  int heartbeat_perf_aggressive_max_processes = 1500;
  int heartbeat_perf_aggressive_max_containers = 50;
  // The heartbeat's inventory of containers, pods and processes: read at most this often.
  double inventory_interval_s = 30;
  std::vector<std::string> workload_name_labels;
  std::vector<std::string> workload_kind_labels;

  // Output and upload.
  std::string output_dir;
  bool upload_results = false;
  // What -o holds of each profile: --output-format collapsed,pprof,svg; --no-flamegraph drops svg.
  std::vector<std::string> output_formats = {"collapsed", "svg"};
  bool flamegraph = true;
  bool rotating_output = false;

  // Profiling.
  int duration_s = 60;
  int frequency_hz = 11;
  bool continuous = false;
  std::vector<int> pids;
  ProfilingMode mode = ProfilingMode::kCpu;

  // perf.
  PerfMode perf_mode = PerfMode::kFp;
  std::vector<std::string> perf_events = {"cycles"};  // gProfiler's names, without duplicates
  SystemProfiler system_profiler = SystemProfiler::kAuto;
  int perf_dwarf_stack_size = 8192;
  bool perf_use_cgroups = false;
  int perf_max_cgroups = 50;
  int perf_max_docker_containers = 0;

  // GPU.
  GpuMode gpu_mode = GpuMode::kMerge;
  double gpu_start_timeout_s = 5;            // past it, a session goes on without the GPU profiler
  int gpu_max_records_per_second = 250'000;  // a process's; past it, their time alone is kept
  int gpu_kernel_name_bytes = 4096;          // a kernel's demangled name past it is cut and hashed
  std::string cupti_library;                 // empty: libdormant_cupti.so beside the executable
  // `dormant-agent gpu [options] -- PROGRAM ARGS...`: the program to start and profile; empty
  // in every other mode.
  std::vector<std::string> launch_command;

  // eBPF map sizes, fixed when the sampler loads.
  int ebpf_stack_map_entries = 16384;
  int ebpf_count_map_entries = 16384;
  int ebpf_process_map_entries = 32768;
  // User stacks: by the files' unwind tables (frame pointers where they have no row), or by
  // frame pointers only; and the kernel memory the tables may take.
  bool ebpf_unwind_tables = true;
  int ebpf_unwind_table_mb = 64;

  // Hidden: for tests and for hosts with unusual perf builds.
  std::string perf_path = "perf";
  int perf_restart_interval_s = 600;
  int perf_restart_rss_mb = 200;
  int perf_script_timeout_s = 300;
  double profiler_stop_timeout_s = 10;

  std::chrono::milliseconds profiler_stop_deadline() const {
    return std::chrono::milliseconds(std::llround(profiler_stop_timeout_s * 1000));
  }
  std::string host_lock;        // the one-agent-per-host lock file; empty: HostLock::default_path()
  std::string profiler_module;  // empty: libdormant_profilers.so beside the executable

  // Guard rails (0: off).
  int skip_system_profilers_above = 0;
  // gProfiler's limits of its runtime profilers; here, of the processes whose Python frames the
  // eBPF sampler walks at once (0: no limit). The lower of the two that are set holds.
  int max_processes_runtime_profiler = 0;
  int python_skip_pyperf_profiler_above = 0;

  // Logging.
  std::string log_level = "info";

  // The base URL (or comma-separated URLs) uploads go to.
  const std::string& upload_server() const {
    return server_host.empty() ? api_server : server_host;
  }
};

// Parses and validates; the config file comes from --config (or DORMANT_CONFIG).
// Whether argv itself holds the token (--token T, --token=T), where every local user can read it
// in /proc/PID/cmdline; the environment, a config file or --token-file are not argv.
bool token_on_command_line(int argc, const char* const* argv);

std::variant<AgentConfig, ExitRequest> parse_agent_args(int argc, const char* const* argv);

// The rules that involve several flags; run by parse_agent_args, exposed for other sources of
// configuration (a heartbeat command builds an AgentConfig too).
// What samples the CPU with these settings, once `--perf-mode dwarf|smart` (which only perf does)
// and `--perf-mode disabled` are taken into account.
CpuProfilers cpu_profilers(const AgentConfig& config);

Result<void> validate(const AgentConfig& config);

}  // namespace dormant::config
